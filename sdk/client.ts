import createFetchClient from 'openapi-fetch';
import type { components, operations, paths } from './schema';
import { retrying } from './retry';
import { waitForJob as waitJob, type Job, type WaitOptions } from './jobs';
import { uploadFile, type UploadOptions, type UploadResult } from './upload';
import { ApiError, UnexpectedAnswerError } from './errors';
import { requestJson } from './node-http';
import { boundedFetch, DEFAULT_TIMEOUTS } from './timeout';

export { ApiError, networkFailure, ResponseTimeoutError, UnexpectedAnswerError } from './errors';
export type { Job, WaitOptions } from './jobs';
export type { UploadOptions, UploadResult } from './upload';
export type { components, operations, paths } from './schema';

/**
 * The typed client of the Media Project Service API: `api` is openapi-fetch over the generated
 * types (every operation, its parameters and answers typed), and the methods below unwrap its
 * answers, throwing `ApiError` for an error status. 429s (and 503s with `Retry-After`) are
 * retried after `Retry-After`, a bounded number of times; no other status is retried.
 */

export type Schemas = components['schemas'];
type Body<Op extends keyof operations> = operations[Op] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
type Query<Op extends keyof operations> = operations[Op]['parameters'] extends { query?: infer Q } ? NonNullable<Q> : never;
type Created<Op extends keyof operations> = operations[Op]['responses'] extends { 201: { content: { 'application/json': infer A } } }
  ? A
  : never;

export type ClientOptions = {
  /** The API's base URL, ending in /v1 (BASE_URL). */
  baseUrl: string;
  /** A personal API token. */
  token: string;
  /** A fetch of your own (a proxy's, a test's); the global one otherwise. */
  fetch?: typeof fetch;
  /** Attempts of a request answered 429 or 503 with Retry-After, the first included (4 unless told). */
  maxAttempts?: number;
  /** Longest `Retry-After` waited for; a longer one is thrown as the ApiError (60 s unless told). */
  maxRetryAfterSeconds?: number;
  /**
   * How long an answer's headers may take before the request fails with `ResponseTimeoutError`
   * (30 s unless told): a server that accepts the connection and never answers. An upload is
   * bounded by its progress instead: this long without a byte taken or an answer after the last.
   */
  timeoutMs?: number;
  /** How long a job's event stream may stay silent before `waitForJob` polls instead (45 s unless told; the service sends a keep-alive every 15 s). */
  streamIdleMs?: number;
};

/** Per request: an Idempotency-Key makes a creating POST safe to send again. */
export type RequestOptions = { idempotencyKey?: string; signal?: AbortSignal };

export type FileAnswer = { contentType: string; fileName: string | null; bytes: Uint8Array };

export type Client = ReturnType<typeof createClient>;

export function createClient(options: ClientOptions) {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const retry = { maxAttempts: options.maxAttempts ?? 4, maxRetryAfterSeconds: options.maxRetryAfterSeconds ?? 60 };
  const timeouts = {
    responseMs: options.timeoutMs ?? DEFAULT_TIMEOUTS.responseMs,
    streamIdleMs: options.streamIdleMs ?? DEFAULT_TIMEOUTS.streamIdleMs,
  };
  // Each attempt bounded on its own: a retry after Retry-After gets the whole bound again.
  const fetch = retrying(boundedFetch(options.fetch ?? ((input, init) => globalThis.fetch(input, init)), timeouts.responseMs), retry);
  // Made at first use: openapi-fetch reads globalThis.Request, which loads undici (node-http.ts says why that matters).
  let made: ReturnType<typeof createFetchClient<paths>> | undefined;
  const api = () =>
    (made ??= jsonChecked(createFetchClient<paths>({ baseUrl, fetch, headers: { Authorization: `Bearer ${options.token}` } })));
  const headers = (o?: RequestOptions): Record<string, string> => (o?.idempotencyKey ? { 'Idempotency-Key': o.idempotencyKey } : {});
  /** A creating POST by node:http, when the client has no fetch of the caller's own. */
  const postJson = <T>(path: string, body: unknown, o?: RequestOptions) =>
    requestJson<T>(
      `${baseUrl}${path}`,
      {
        method: 'POST',
        headers: { Authorization: `Bearer ${options.token}`, 'Content-Type': 'application/json', ...headers(o) },
        body: JSON.stringify(body),
        signal: o?.signal,
        responseMs: timeouts.responseMs,
      },
      retry,
    );

  const client = {
    /** The openapi-fetch client itself, for anything the methods below do not cover. */
    get api() {
      return api();
    },
    status: () => answer(api().GET('/status')),
    agentModels: () => answer(api().GET('/agent/models')),
    getJob: (jobId: string, o?: RequestOptions) =>
      answer(api().GET('/jobs/{job_id}', { params: { path: { job_id: jobId } }, signal: o?.signal })),
    listJobs: (query: Query<'listJobs'> = {}) => answer(api().GET('/jobs', { params: { query } })),
    async cancelJob(jobId: string): Promise<void> {
      await answer(api().DELETE('/jobs/{job_id}', { params: { path: { job_id: jobId } } }));
    },
    deliveries: (jobId: string) => answer(api().GET('/jobs/{job_id}/deliveries', { params: { path: { job_id: jobId } } })),
    redeliver: (jobId: string, o?: RequestOptions) =>
      answer(api().POST('/jobs/{job_id}/deliveries', { params: { path: { job_id: jobId }, header: headers(o) } })),
    // By node:http unless the caller gave a fetch: the first request of `mps import`, before its upload.
    importMedia: (body: Body<'importProjectMedia'>, o?: RequestOptions): Promise<Created<'importProjectMedia'>> =>
      options.fetch
        ? answer(api().POST('/jobs/import/project_media', { body, params: { header: headers(o) }, signal: o?.signal }))
        : postJson<Created<'importProjectMedia'>>('/jobs/import/project_media', body, o),
    agent: (body: Body<'agentPrompt'>, o?: RequestOptions) =>
      answer(api().POST('/jobs/agent', { body, params: { header: headers(o) }, signal: o?.signal })),
    publish: (body: Body<'publish'>, o?: RequestOptions) =>
      answer(api().POST('/jobs/publish', { body, params: { header: headers(o) }, signal: o?.signal })),
    listProjects: (query: Query<'listProjects'> = {}) => answer(api().GET('/projects', { params: { query } })),
    getProject: (projectId: string) => answer(api().GET('/projects/{project_id}', { params: { path: { project_id: projectId } } })),
    search: (query: Query<'search'>) => answer(api().GET('/search', { params: { query } })),
    getTranscript: (projectId: string, compositionId: string) =>
      answer(
        api().GET('/projects/{project_id}/compositions/{composition_id}/transcript', {
          params: { path: { project_id: projectId, composition_id: compositionId } },
        }),
      ),
    editTranscript: (projectId: string, compositionId: string, body: Body<'editTranscript'>) =>
      answer(
        api().PUT('/projects/{project_id}/compositions/{composition_id}/transcript', {
          params: { path: { project_id: projectId, composition_id: compositionId } },
          body,
        }),
      ),
    conversation: (projectId: string, conversationId: string) =>
      answer(
        api().GET('/projects/{project_id}/conversations/{conversation_id}', {
          params: { path: { project_id: projectId, conversation_id: conversationId } },
        }),
      ),
    exportTranscript: (body: Body<'exportTranscript'>) => fileAnswer(api().POST('/export/transcript', { body, parseAs: 'stream' })),
    exportTimeline: (body: Body<'exportTimeline'>, query: Query<'exportTimeline'> = {}) =>
      fileAnswer(api().POST('/export/timeline', { body, params: { query }, parseAs: 'stream' })),
    createEditInLink: (body: Body<'createEditInLink'>, o?: RequestOptions) =>
      answer(api().POST('/edit_in_descript/schema', { body, params: { header: headers(o) } })),

    /** Until the job is stopped or cancelled: its live events when the server has them, else polling. */
    waitForJob: (jobId: string, o: WaitOptions = {}): Promise<Job> =>
      waitJob(
        // The event stream by node:http unless the caller gave a fetch: `mps import --wait` opens it during the upload.
        {
          baseUrl,
          token: options.token,
          fetch,
          http: !options.fetch,
          timeouts,
          getJob: (id, signal) => client.getJob(id, { signal }),
        },
        jobId,
        o,
      ),
    /** Uploads a file to an import's `upload_url` in resumable parts, from what the server already has. */
    uploadFile: (path: string, uploadUrl: string, o: UploadOptions = {}): Promise<UploadResult> =>
      // A fetch of the caller's own (a proxy's, a test's) carries the upload too.
      uploadFile(fetch, path, uploadUrl, { transport: options.fetch ? 'fetch' : 'http', idleMs: timeouts.responseMs, ...o }),

    /**
     * Imports and waits for the job: `files` are local files to upload (`ref` → path and type),
     * added to `add_media` as upload items; URL items go in `request.add_media` as usual.
     */
    async importAndWait(
      request: Body<'importProjectMedia'>,
      o: WaitOptions & RequestOptions & { files?: Record<string, { path: string; contentType: string }>; upload?: UploadOptions } = {},
    ): Promise<Job> {
      const { stat } = await import('node:fs/promises');
      const add_media = { ...(request.add_media ?? {}) };
      for (const [ref, file] of Object.entries(o.files ?? {})) {
        add_media[ref] = { content_type: file.contentType, file_size: (await stat(file.path)).size };
      }
      const accepted = await client.importMedia({ ...request, add_media }, o);
      const urls = (accepted as { upload_urls?: Record<string, { upload_url: string }> }).upload_urls ?? {};
      for (const [ref, file] of Object.entries(o.files ?? {})) {
        // The URLs were just issued: nothing to ask the server before sending.
        await client.uploadFile(file.path, urls[ref].upload_url, { fresh: true, ...o.upload, signal: o.signal });
      }
      return client.waitForJob(accepted.job_id, o);
    },
    /** Prompts the project agent and waits for its turn. */
    async editAndWait(request: Body<'agentPrompt'>, o: WaitOptions & RequestOptions = {}): Promise<Job> {
      const accepted = await client.agent(request, o);
      return client.waitForJob(accepted.job_id, o);
    },
    /** Publishes a composition and waits for the render: the job's result has `share_url` and `download_url`. */
    async publishAndWait(request: Body<'publish'>, o: WaitOptions & RequestOptions = {}): Promise<Job> {
      const accepted = await client.publish(request, o);
      return client.waitForJob(accepted.job_id, o);
    },
  };
  return client;
}

/**
 * openapi-fetch parses a 2xx as JSON whatever its type, so a page from another server (a wrong
 * base URL, a captive portal) failed as "Unexpected token '<'": such an answer is thrown as an
 * `UnexpectedAnswerError` saying what came back. Files (`parseAs: 'stream'`) are not JSON.
 */
function jsonChecked<C extends { use: (m: import('openapi-fetch').Middleware) => void }>(api: C): C {
  api.use({
    async onResponse({ response, options }) {
      if (!response.ok || options.parseAs !== 'json' || response.status === 204 || response.headers.get('content-length') === '0') return;
      const type = response.headers.get('content-type') ?? '';
      if (/[/+]json\b/i.test(type)) return;
      const start = await response.text().catch(() => '');
      throw new UnexpectedAnswerError(response.status, type, start, response.url);
    },
  });
  return api;
}

type FetchAnswer<T> = { data?: T; error?: unknown; response: Response };

/** The body of a 2xx, or the error thrown as an ApiError. */
async function answer<T>(call: Promise<FetchAnswer<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw ApiError.of(response, error);
  return data as T;
}

async function fileAnswer(call: Promise<FetchAnswer<unknown>>): Promise<FileAnswer> {
  const { error, response } = await call;
  if (!response.ok) throw ApiError.of(response, error);
  const disposition = response.headers.get('content-disposition') ?? '';
  const name = /filename\*=UTF-8''([^;]+)/i.exec(disposition)?.[1] ?? /filename="([^"]+)"/i.exec(disposition)?.[1];
  return {
    contentType: response.headers.get('content-type') ?? 'application/octet-stream',
    fileName: name ? decodeURIComponent(name) : null,
    bytes: new Uint8Array(await response.arrayBuffer()),
  };
}
