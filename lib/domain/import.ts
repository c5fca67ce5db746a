/**
 * The import job's request and result as domain types (STYLE §13): what the command API stores
 * on `JobQueued` and what the processor records on `JobStopped`.
 */

export type ImportMediaItem =
  | { readonly url: string; readonly language: string | null }
  | { readonly tracks: readonly { readonly media: string; readonly offset: number }[] };

/** The request with every reference checked and defaults filled in: all the processor reads. */
export type ImportPlan = {
  /** Media reference → item, in request order (an array of pairs: names are data, not keys). */
  readonly media: readonly (readonly [ref: string, item: ImportMediaItem])[];
  readonly compositions: readonly {
    readonly name: string;
    readonly clips: readonly string[];
    readonly width: number;
    readonly height: number;
  }[];
};

export type MediaStatus =
  { readonly status: 'success'; readonly duration_seconds: number } | { readonly status: 'failed'; readonly error_message: string };

export type ImportResult = {
  readonly status: 'success' | 'partial' | 'error';
  readonly media_status: Readonly<Record<string, MediaStatus>>;
  readonly media_seconds_used: number;
  readonly created_compositions: readonly { readonly id: string; readonly name: string }[];
  readonly error_code?: string;
  readonly error_message?: string;
};
