/** Time and ids are inputs (STYLE §4): factories take these so tests are deterministic. */
export interface Clock {
  now(): Date;
}

export interface Ids {
  uuid(): string;
  /** Time-ordered UUID (v7). */
  uuidv7(): string;
}
