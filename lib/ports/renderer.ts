import type { RenderSpec } from '../domain/render-plan';

/** What a finished render is: the file written, and what the publish records of it. */
export type RenderOutcome = {
  readonly durationSeconds: number;
  readonly sizeBytes: number;
  /** Video only. */
  readonly width?: number;
  readonly height?: number;
};

export type RenderOptions = {
  /** Aborting kills the render within a second and leaves no file at `output`. */
  readonly signal?: AbortSignal;
  /** The fraction done, 0 to 1, as the render goes: at least every 2 s while it runs. */
  readonly onProgress?: (fraction: number) => void;
};

/**
 * Renderer: turns a composition's clip list (RenderSpec, lib/domain/render-plan) into one media
 * file, MP4 H.264/AAC for Video, M4A/AAC for Audio. `output` appears whole or not at all: a failed
 * or cancelled render leaves nothing there. Failures are AppErrors (retriable or not).
 */
export interface Renderer {
  render(spec: RenderSpec, output: string, options?: RenderOptions): Promise<RenderOutcome>;
}
