import type { Rejection } from './errors';

/**
 * An aggregate's rules as one value (STYLE §3): `decide(command, state) → events | refusal`,
 * `evolve(state, event) → state`, from `initialState()`. Pure: time and ids come in commands.
 * Command handling is always read stream → fold → decide → append with the expected revision
 * (lib/app/command-handler.ts).
 */
export type Decider<C, E extends { type: string; data: object }, S> = {
  readonly initialState: () => S;
  readonly evolve: (state: S, event: E) => S;
  readonly decide: (command: C, state: S) => E[] | Rejection;
  /** The same as reducing `events` with `evolve`, where an aggregate can fold many faster (a composition's cuts). */
  readonly fold?: (state: S, events: readonly E[]) => S;
};

/**
 * How a stream's folded state is kept as a snapshot (lib/app/snapshots.ts): as plain JSON, and
 * back. `version` names the shape: a snapshot of another version is not used (the stream is
 * folded from its start instead), so a change of the state's shape bumps it.
 */
export type SnapshotCodec<S> = {
  readonly version: number;
  readonly encode: (state: S) => unknown;
  readonly decode: (json: unknown) => S;
};
