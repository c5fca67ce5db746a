/**
 * Every operation the API answers under /v1, as a compact table the OpenAPI document is built
 * from (openapi.ts). Schemas are named by their `$id` in schemas/api; error statuses by number
 * (the routes' common ones, 400 401 404 429 500 503, are added to every operation with a token).
 */

export type Param = { description: string; schema?: Record<string, unknown>; required?: boolean };

export type Response = {
  description: string;
  /** A schemas/api `$id`: the JSON body. */
  schema?: string;
  /** Otherwise the media types of a body that is not JSON (a file, a stream). */
  content?: string[];
  /** Response headers: name → description. */
  headers?: Record<string, string>;
  example?: unknown;
};

export type Operation = {
  id: string;
  method: 'get' | 'post' | 'put' | 'delete' | 'head';
  /** Relative to {base_url} (which ends in /v1), with `{param}`s. */
  path: string;
  summary: string;
  description: string;
  tags: string[];
  /** `none`: no token (signed URLs are their own credential; this document is public). */
  security?: 'bearer' | 'none';
  pathParams?: Record<string, Param>;
  /** A schemas/api `$id` whose properties are the query parameters. */
  query?: string;
  headers?: Record<string, Param>;
  body?: { schema?: string; contentType?: string; required?: boolean; description?: string; example?: unknown };
  responses: Record<string, Response>;
  /** Statuses beyond the common ones. */
  errors: number[];
  /** Why this operation answers a status, added to its description. */
  errorNotes?: Record<number, string>;
  /** The 2xx JSON body's example, unless its response has one. */
  example?: unknown;
};

const UUID = { type: 'string', format: 'uuid' };
const JOB_ID = { description: 'The job id (`job_id` of the 201).', schema: { type: 'string', minLength: 1, maxLength: 100 } };
const PROJECT_ID = { description: 'The project id.', schema: UUID };
const COMPOSITION_ID = {
  description: 'The composition: its UUID or its 5-character short id.',
  schema: { type: 'string', minLength: 1, maxLength: 100 },
};
const IDEMPOTENCY: Record<string, Param> = {
  'Idempotency-Key': {
    description:
      'Makes the request safe to retry for 24 hours: the first answer is given again (with `Idempotent-Replayed: true`) and nothing is created twice. Another request with the same key is 422; the same one still in flight is 409 `state: "in_flight"`.',
    schema: { type: 'string', minLength: 1, maxLength: 255 },
  },
};
const REPLAYED = { 'Idempotent-Replayed': '`true` when this is the first answer to the same Idempotency-Key, given again.' };
/** A creating POST with a JSON body. */
const JSON_POST_ERRORS = [409, 413, 415, 422];

const IDS = {
  job: 'project-media-import-0192f1e4-7b3c-7d4e-8f00-1a2b3c4d5e6f',
  drive: '0192f1e4-0000-7000-8000-000000000001',
  project: '0192f1e4-1111-7000-8000-000000000002',
  composition: '0192f1e4-2222-7000-8000-000000000003',
  conversation: '0192f1e4-3333-7000-8000-000000000004',
  asset: '0192f1e4-4444-7000-8000-000000000005',
};
const PROJECT_URL = `https://web.example.com/${IDS.project}`;
const STOPPED_JOB = {
  job_id: IDS.job,
  job_type: 'import/project_media',
  job_state: 'stopped',
  created_at: '2026-01-05T10:00:00.000Z',
  stopped_at: '2026-01-05T10:00:42.000Z',
  drive_id: IDS.drive,
  project_id: IDS.project,
  project_url: PROJECT_URL,
  result: { status: 'success', media_status: { 'talk.mp4': { status: 'success', duration_seconds: 61.5 } }, media_seconds_used: 61.5 },
};

export const OPERATIONS: readonly Operation[] = [
  {
    id: 'getStatus',
    method: 'get',
    path: '/status',
    summary: 'Check the API and the token',
    description: "The token's drive and the API version.",
    tags: ['drive'],
    responses: { 200: { description: 'The token is valid.', schema: 'status' } },
    errors: [],
    example: { drive_id: IDS.drive, drive_name: 'Studio', api_version: '1.2' },
  },
  {
    id: 'importProjectMedia',
    method: 'post',
    path: '/jobs/import/project_media',
    summary: 'Import media into a new or existing project',
    description:
      'Media from URLs, or direct uploads (an item with `content_type` and `file_size` gets an `upload_url`, PUT the bytes there), probed and transcribed, with compositions. Answers at once with the job.',
    tags: ['jobs'],
    headers: IDEMPOTENCY,
    body: {
      schema: 'import-request',
      example: { project_name: 'Interview', add_media: { 'talk.mp4': { url: 'https://media.example.com/talk.mp4' } } },
    },
    responses: { 201: { description: 'The import job is accepted.', schema: 'import-response', headers: REPLAYED } },
    errors: [402, 403, ...JSON_POST_ERRORS],
    errorNotes: { 402: 'The drive has no media seconds left.' },
    example: { job_id: IDS.job, drive_id: IDS.drive, project_id: IDS.project, project_url: PROJECT_URL },
  },
  {
    id: 'uploadFile',
    method: 'put',
    path: '/uploads/{asset_id}',
    summary: 'Upload a file, whole or in resumable parts',
    description:
      "The signed `upload_url` of an import's upload item (its query carries the signature; no token). Send the whole file, or parts with `Content-Range: bytes first-last/total`; `Content-Range: bytes */total` with no body asks how much has arrived (308 with `Range`, or 200 when complete).",
    tags: ['files'],
    security: 'none',
    pathParams: { asset_id: { description: 'The asset id of the upload item.', schema: UUID } },
    headers: {
      'Content-Range': { description: '`bytes first-last/total` for a part, `bytes */total` to ask for progress.' },
    },
    body: { contentType: 'application/octet-stream', required: false, description: 'The bytes of the file or part.' },
    responses: {
      200: { description: 'The upload is complete.', schema: 'upload-response', example: { asset_id: IDS.asset, size: 73400320 } },
      308: {
        description: 'The upload is incomplete: `Range` says what arrived (none: nothing yet).',
        headers: { Range: '`bytes=0-<last>` of what arrived.' },
      },
    },
    errors: [400, 403, 404, 409, 413, 415, 429, 500, 503],
    errorNotes: {
      403: 'The URL is tampered with or expired.',
      409: 'The upload is already complete, the part starts past a gap, or the job takes no more uploads.',
      429: 'The drive has as many uploads in progress as it may.',
    },
  },
  {
    id: 'getJob',
    method: 'get',
    path: '/jobs/{job_id}',
    summary: 'Get a job: its state, progress and result',
    description: 'Readable the moment its 201 is returned; a final state only once what the job changed is readable.',
    tags: ['jobs'],
    pathParams: { job_id: JOB_ID },
    responses: { 200: { description: 'The job.', schema: 'job' } },
    errors: [403],
    example: STOPPED_JOB,
  },
  {
    id: 'cancelJob',
    method: 'delete',
    path: '/jobs/{job_id}',
    summary: 'Cancel a queued or running job',
    description: 'A stopped or cancelled job answers 409 with `state`.',
    tags: ['jobs'],
    pathParams: { job_id: JOB_ID },
    responses: { 204: { description: 'The job is cancelled.' } },
    errors: [403, 409],
    errorNotes: { 409: 'The job is already stopped or cancelled.' },
  },
  {
    id: 'listJobs',
    method: 'get',
    path: '/jobs',
    summary: 'List jobs, newest first',
    description: 'Filtered by project, type and creation time; paged with `cursor`.',
    tags: ['jobs'],
    query: 'jobs-list-query',
    responses: { 200: { description: 'A page of jobs.', schema: 'jobs-list' } },
    errors: [],
    example: { data: [STOPPED_JOB], pagination: {} },
  },
  {
    id: 'watchJob',
    method: 'get',
    path: '/jobs/{job_id}/events',
    summary: 'Follow a job live (Server-Sent Events)',
    description:
      'Each state and progress change as an event whose data is the job document, then the final document, then the stream closes. `Last-Event-ID` resumes.',
    tags: ['jobs'],
    pathParams: { job_id: JOB_ID },
    query: 'job-events-query',
    headers: { 'Last-Event-ID': { description: 'The id of the last event seen, to resume after it.' } },
    responses: {
      200: {
        description: 'The event stream.',
        content: ['text/event-stream'],
        example: `id: 1\nevent: job\ndata: ${JSON.stringify(STOPPED_JOB)}\n\n`,
      },
    },
    errors: [403],
  },
  {
    id: 'listDeliveries',
    method: 'get',
    path: '/jobs/{job_id}/deliveries',
    summary: "A job's webhook attempts (extension)",
    description: 'The webhook of a job with `callback_url`: its state and every attempt.',
    tags: ['jobs'],
    pathParams: { job_id: JOB_ID },
    responses: { 200: { description: 'The deliveries.', schema: 'deliveries' } },
    errors: [403],
    example: { job_id: IDS.job, state: 'none', attempts: [] },
  },
  {
    id: 'redeliverJob',
    method: 'post',
    path: '/jobs/{job_id}/deliveries',
    summary: "Deliver a job's webhook again now (extension)",
    description: 'For a stopped job with `callback_url`.',
    tags: ['jobs'],
    pathParams: { job_id: JOB_ID },
    headers: IDEMPOTENCY,
    responses: { 202: { description: 'A delivery is scheduled now.', schema: 'redelivery-response', headers: REPLAYED } },
    errors: [403, 409, 413, 415, 422],
    example: { job_id: IDS.job, state: 'pending' },
  },
  {
    id: 'agentPrompt',
    method: 'post',
    path: '/jobs/agent',
    summary: 'Prompt the project agent to edit compositions',
    description: 'One turn of a conversation (`conversation_id` continues one), by the model named or `auto`.',
    tags: ['jobs'],
    headers: IDEMPOTENCY,
    body: { schema: 'agent-request', example: { project_id: IDS.project, prompt: 'remove filler words' } },
    responses: { 201: { description: 'The agent job is accepted.', schema: 'agent-response', headers: REPLAYED } },
    errors: [402, 403, ...JSON_POST_ERRORS],
    errorNotes: { 402: 'Too few AI credits for the turn.', 403: 'The drive admin disabled the agent, or the project is of another drive.' },
    example: {
      job_id: IDS.job.replace('project-media-import-', ''),
      drive_id: IDS.drive,
      drive_name: 'Studio',
      project_id: IDS.project,
      project_url: PROJECT_URL,
      conversation_id: IDS.conversation,
      resolved_model: 'builtin',
    },
  },
  {
    id: 'listAgentModels',
    method: 'get',
    path: '/agent/models',
    summary: 'The agent models and aliases a prompt may name',
    description: 'The catalog is fixed while the service runs.',
    tags: ['drive'],
    responses: { 200: { description: 'The catalog.', schema: 'agent-models' } },
    errors: [],
    example: { availableModels: [{ id: 'auto', cost: 'medium' }], aliases: [] },
  },
  {
    id: 'publish',
    method: 'post',
    path: '/jobs/publish',
    summary: 'Publish a composition: a render, a share page and a download URL',
    description: 'The result carries `share_url`, `download_url` and its expiry.',
    tags: ['jobs'],
    headers: IDEMPOTENCY,
    body: { schema: 'publish-request', example: { project_id: IDS.project, media_type: 'Video', access_level: 'unlisted' } },
    responses: { 201: { description: 'The publish job is accepted.', schema: 'publish-response', headers: REPLAYED } },
    errors: [403, ...JSON_POST_ERRORS],
    errorNotes: { 422: 'The composition has no clips, or no video for `media_type: "Video"`.' },
    example: { job_id: IDS.conversation, drive_id: IDS.drive, drive_name: 'Studio', project_id: IDS.project, project_url: PROJECT_URL },
  },
  {
    id: 'exportTranscript',
    method: 'post',
    path: '/export/transcript',
    summary: "Export a composition's transcript",
    description: 'txt, Markdown, HTML, RTF, Word or SubRip; speakers, markers, timecodes. Answered at once as a file.',
    tags: ['exports'],
    body: { schema: 'export-transcript-request', example: { project_id: IDS.project, format: 'srt' } },
    responses: {
      200: {
        description: 'The file (`Content-Disposition` names it).',
        content: [
          'text/plain',
          'text/markdown',
          'text/html',
          'application/rtf',
          'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
          'application/x-subrip',
        ],
        headers: { 'Content-Disposition': 'attachment; filename="…"' },
        example: '1\n00:00:00,000 --> 00:00:02,500\nHello and welcome.\n',
      },
    },
    errors: [403, 413, 415],
  },
  {
    id: 'exportTimeline',
    method: 'post',
    path: '/export/timeline',
    summary: "Export a composition's timeline to other editors (extension)",
    description:
      'FCPXML 1.10, CMX 3600 EDL or OpenTimelineIO; with `with_media=true`, a zip with its media. A multitrack sequence becomes a lane ' +
      'per track (FCPXML connected clips, an OTIO track each, EDL channels A and A2); an EDL holds at most two audio tracks and one ' +
      'video track, so a composition needing more is a 400 naming the formats that can hold it.',
    tags: ['exports'],
    query: 'timeline-export-query',
    body: { schema: 'timeline-export-request', example: { project_id: IDS.project, format: 'otio' } },
    responses: {
      200: {
        description: 'The file (`Content-Disposition` names it).',
        content: ['application/xml', 'text/plain', 'application/json', 'application/zip'],
        headers: { 'Content-Disposition': 'attachment; filename="…"' },
        example: '<?xml version="1.0" encoding="UTF-8"?>\n<fcpxml version="1.10">…</fcpxml>\n',
      },
    },
    errors: [403, 413, 415],
  },
  {
    id: 'listProjects',
    method: 'get',
    path: '/projects',
    summary: "List the drive's projects",
    description: 'Filters, sorts and keyset paging (`cursor`).',
    tags: ['projects'],
    query: 'projects-list-query',
    responses: { 200: { description: 'A page of projects.', schema: 'projects-list' } },
    errors: [],
    example: {
      data: [
        {
          id: IDS.project,
          name: 'Interview',
          created_at: '2026-01-05T10:00:00.000Z',
          updated_at: '2026-01-05T10:00:42.000Z',
          folder_path: 'Shows',
        },
      ],
      pagination: {},
    },
  },
  {
    id: 'getProject',
    method: 'get',
    path: '/projects/{project_id}',
    summary: 'A project: its media and compositions',
    description: 'Media by display path with type and duration; compositions with duration and media type.',
    tags: ['projects'],
    pathParams: { project_id: PROJECT_ID },
    responses: { 200: { description: 'The project.', schema: 'project' } },
    errors: [403],
    example: {
      id: IDS.project,
      name: 'Interview',
      drive_id: IDS.drive,
      created_at: '2026-01-05T10:00:00.000Z',
      updated_at: '2026-01-05T10:00:42.000Z',
      media_files: { 'talk.mp4': { type: 'video', duration: 61.5 } },
      compositions: [{ id: IDS.composition, name: 'talk', duration: 61.5, media_type: 'video' }],
      publishes: [],
    },
  },
  {
    id: 'getTranscript',
    method: 'get',
    path: '/projects/{project_id}/compositions/{composition_id}/transcript',
    summary: "A composition's transcript, to edit by text (extension)",
    description: 'The text, its words with times, and the revision to send back with an edit.',
    tags: ['projects'],
    pathParams: { project_id: PROJECT_ID, composition_id: COMPOSITION_ID },
    responses: { 200: { description: 'The transcript.', schema: 'transcript' } },
    errors: [403],
    example: { project_id: IDS.project, composition_id: IDS.composition, revision: 1, duration: 2.5, text: 'Hello world', words: [] },
  },
  {
    id: 'editTranscript',
    method: 'put',
    path: '/projects/{project_id}/compositions/{composition_id}/transcript',
    summary: 'Edit a composition by deleting words from its transcript (extension)',
    description: 'Send the text with words deleted and the revision it was read at; the composition is cut to match.',
    tags: ['projects'],
    pathParams: { project_id: PROJECT_ID, composition_id: COMPOSITION_ID },
    body: { schema: 'transcript-edit-request', example: { text: 'Hello', revision: 1 } },
    responses: { 200: { description: 'The transcript after the edit.', schema: 'transcript' } },
    errors: [403, 409, 413, 415],
    errorNotes: { 409: 'Another edit landed since `revision`.' },
    example: { project_id: IDS.project, composition_id: IDS.composition, revision: 2, duration: 1.2, text: 'Hello', words: [] },
  },
  {
    id: 'getConversation',
    method: 'get',
    path: '/projects/{project_id}/conversations/{conversation_id}',
    summary: "An agent conversation's turns (extension)",
    description: 'Every prompt of the conversation and what the agent did.',
    tags: ['projects'],
    pathParams: { project_id: PROJECT_ID, conversation_id: { description: 'The conversation id.', schema: UUID } },
    responses: { 200: { description: 'The conversation.', schema: 'conversation' } },
    errors: [403],
    example: { conversation_id: IDS.conversation, project_id: IDS.project, started_at: '2026-01-05T10:00:00.000Z', turns: [] },
  },
  {
    id: 'search',
    method: 'get',
    path: '/search',
    summary: 'Search names and transcripts',
    description: 'Projects, folders, compositions and media by name or spoken content, with snippets.',
    tags: ['projects'],
    query: 'search-query',
    responses: { 200: { description: 'The hits.', schema: 'search-results' } },
    errors: [],
    example: { results: [{ type: 'project', project_id: IDS.project, name: 'Interview', updated_at: '2026-01-05T10:00:42.000Z' }] },
  },
  {
    id: 'createEditInLink',
    method: 'post',
    path: '/edit_in_descript/schema',
    summary: 'Create a one-time import link (partner access)',
    description: 'The URL to send the user to; valid 3 hours, single use.',
    tags: ['partner'],
    headers: IDEMPOTENCY,
    body: {
      schema: 'edit-in-schema',
      example: {
        partner_drive_id: IDS.drive,
        project_schema: { schema_version: '1.0.0', files: [{ uri: 'https://media.example.com/a.mp4' }] },
      },
    },
    responses: { 201: { description: 'The import link.', schema: 'edit-in-response', headers: REPLAYED } },
    errors: [403, ...JSON_POST_ERRORS],
    errorNotes: { 403: 'The drive has no partner access.' },
    example: { url: 'https://web.example.com/import?nonce=abc', expires_at: '2026-01-05T13:00:00.000Z' },
  },
  {
    id: 'getPublishedProject',
    method: 'get',
    path: '/published_projects/{publishedProjectSlug}',
    summary: 'Published project metadata (partner access)',
    description: 'The metadata, subtitles and a signed download URL of a share page.',
    tags: ['partner'],
    pathParams: {
      publishedProjectSlug: {
        description: 'The URL slug of the published project.',
        schema: { type: 'string', minLength: 1, maxLength: 200 },
      },
    },
    responses: { 200: { description: 'The published project.', schema: 'published-project' } },
    errors: [403, 409],
    errorNotes: { 409: 'The published project is not ready (`state`, e.g. `processing`).' },
    example: {
      project_id: IDS.project,
      publish_type: 'video',
      privacy: 'unlisted',
      metadata: { title: 'Interview', duration_seconds: 61.5, duration_formatted: '00:01:01', published_at: '2026-01-05T10:05:00.000Z' },
    },
  },
  {
    id: 'download',
    method: 'get',
    path: '/downloads/{id}',
    summary: 'Download a stored file by its signed URL',
    description: "A render's `download_url` (its query carries the signature; no token). Ranges, `HEAD`, `ETag`.",
    tags: ['files'],
    security: 'none',
    pathParams: { id: { description: 'The download id.' } },
    headers: { Range: { description: '`bytes=first-last`.' }, 'If-None-Match': { description: 'An ETag seen before.' } },
    responses: {
      200: { description: 'The file.', content: ['application/octet-stream'], headers: { ETag: 'The entity tag.' } },
      206: { description: 'The range asked for.', content: ['application/octet-stream'], headers: { 'Content-Range': 'The range sent.' } },
      304: { description: 'Unchanged since the ETag given.' },
    },
    errors: [400, 403, 404, 416, 429, 500, 503],
    errorNotes: { 403: 'The URL is tampered with or expired.' },
  },
  {
    id: 'getOpenApiDocument',
    method: 'get',
    path: '/openapi.json',
    summary: 'This document',
    description: 'The OpenAPI 3.1 document of the API (no token; cacheable, with an ETag).',
    tags: ['meta'],
    security: 'none',
    responses: {
      200: {
        description: 'The document.',
        content: ['application/json'],
        headers: { ETag: 'The entity tag.' },
        example: { openapi: '3.1.0' },
      },
      304: { description: 'Unchanged since the ETag given.' },
    },
    errors: [500],
  },
];
