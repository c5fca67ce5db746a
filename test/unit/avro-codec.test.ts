import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Type } from 'avsc';
import { canonicalForm, createAvroCodec, crc64Avro, fingerprintOf } from '../../lib/adapters/kafka/avro-codec';
import { EVENT_TYPES, type DomainEvent } from '../../lib/domain/events';
import { DEFAULT_SETTINGS } from '../../lib/domain/tenancy';
import type { StoredEvent } from '../../lib/ports/event-store';

const SCHEMA_DIR = join(__dirname, '../../schemas/events');
const codec = createAvroCodec({ schemaDir: SCHEMA_DIR });

const T = '2024-05-01T10:00:00.000Z';
const JOB = 'project-media-import-5b0f7c1e-8a43-4a7e-9d4b-0f3c2a1e6d55';
const PROJECT = '1e7d4a0c-3b5f-4c8e-a2d9-6f0b1c3e5a77';
const DRIVE = '9c2e6b1a-0d4f-4e3a-8b7c-5a1d2f3e4b60';
const USER = '3f9a2b7c-1d4e-4f5a-9b8c-7d6e5f4a3b21';
const URL = `https://web.example/${PROJECT}`;
const SCOPE = { drive_id: DRIVE, project_id: PROJECT };
const BY_USER = { created_by: USER, created_at: T };
const REQUEST = { files: [{ uri: 'https://cdn.example/a.mp4', name: 'a.mp4' }], team_access: 'edit', nested: { n: 1, ok: true } };
const TRACKS = [
  { media: 'cam-a.mp4', offset: 0 },
  { media: 'cam-b.mp4', offset: 1.5 },
];

const domainEvents: DomainEvent[] = [
  {
    type: 'JobQueued',
    data: {
      job_id: JOB,
      job_type: 'import/project_media',
      ...SCOPE,
      project_url: URL,
      callback_url: null,
      request: REQUEST as never,
      ...BY_USER,
    },
  },
  { type: 'JobStarted', data: { job_id: JOB, attempt: 1, started_at: T, worker_id: 'host-a:42', lease_until: T } },
  { type: 'JobLeaseRenewed', data: { job_id: JOB, attempt: 1, lease_until: T } },
  { type: 'JobProgressed', data: { job_id: JOB, label: 'transcribing', percent: 42, at: T } },
  {
    type: 'JobStopped',
    data: { job_id: JOB, result: { status: 'success', media_seconds_used: 12.5 } as never, project_url: `${URL}/1e7d4`, stopped_at: T },
  },
  { type: 'JobCancelled', data: { job_id: JOB, stopped_at: T } },
  { type: 'JobInterrupted', data: { job_id: JOB, attempt: 2, at: T } },
  { type: 'JobAttemptFailed', data: { job_id: JOB, attempt: 1, reason: 'the transcriber answered 503', code: 'unavailable', at: T } },
  { type: 'MediaSecondsCharged', data: { drive_id: DRIVE, job_id: JOB, ref: 'cam-a.mp4', seconds: 12.5, charged_at: T } },
  {
    type: 'BalanceReserved',
    data: { drive_id: DRIVE, reservation_id: `${JOB}:cam-a.mp4`, job_id: JOB, kind: 'media_seconds', amount: 12.5, reserved_at: T },
  },
  {
    type: 'ReservationSettled',
    data: { drive_id: DRIVE, reservation_id: `${JOB}:cam-a.mp4`, job_id: JOB, kind: 'media_seconds', used: 12.5, settled_at: T },
  },
  {
    type: 'ReservationReleased',
    data: { drive_id: DRIVE, reservation_id: `${JOB}:turn-1`, job_id: JOB, kind: 'ai_credits', reason: 'cancelled', released_at: T },
  },
  {
    type: 'ProjectCreated',
    data: {
      ...SCOPE,
      name: 'Interview',
      folder_path: 'A/B',
      team_access: 'view',
      job_id: JOB,
      partner: { partner_drive_id: DRIVE, source_id: 'episode-42' },
      ...BY_USER,
    },
  },
  {
    type: 'MediaImported',
    data: {
      project_id: PROJECT,
      ref: 'multicam',
      asset_id: USER,
      media_type: 'sequence',
      duration_seconds: 61.25,
      blob_key: null,
      size_bytes: 5_000_000_000,
      has_audio: true,
      has_video: true,
      source_url: null,
      language: 'en',
      tracks: TRACKS,
      width: 1920,
      height: 1080,
      frame_rate: 29.97,
      rotation: 90,
      sample_rate: 48_000,
      channels: 2,
      job_id: JOB,
      imported_at: T,
    },
  },
  {
    type: 'CompositionCreated',
    data: {
      project_id: PROJECT,
      composition_id: `${PROJECT.slice(0, 30)}000001`,
      short_id: '1e7d4',
      name: 'Main',
      clips: [{ media: 'multicam', in: 0, out: 61.25 }],
      markers: [{ time: 12.5, label: 'laugh' }],
      width: 1920,
      height: 1080,
      origin: `${JOB}#0`,
      created_at: T,
    },
  },
  { type: 'CompositionRangeCut', data: { from: 1.25, to: 3.5, at: T } },
  { type: 'CompositionRangeKept', data: { from: 0, to: 58.75, planned_on: 7, at: T } },
  {
    type: 'CompositionClipsInserted',
    data: {
      time: 10,
      clips: [
        { media: 'cam-b.mp4', in: 2.5, out: 7.125 },
        { media: 'constructor', in: 0, out: 1 },
      ],
      at: T,
    },
  },
  { type: 'CompositionClipsRemoved', data: { indexes: [0, 2], at: T } },
  { type: 'CompositionClipsReordered', data: { order: [1, 0], at: T } },
  { type: 'CompositionRenamed', data: { name: 'Final cut', planned_on: null, at: T } },
  { type: 'CompositionMarkerAdded', data: { time: 30.001, label: 'chapter 2', at: T } },
  {
    type: 'CompositionReverted',
    data: {
      to_revision: 4,
      name: 'Main',
      clips: [{ media: 'multicam', in: 0, out: 61.25 }],
      markers: [{ time: 1.5, label: 'intro' }],
      audio: { loudness_lufs: -16, noise_reduction: true },
      deleted: false,
      planned_on: 9,
      at: T,
    },
  },
  {
    type: 'CompositionRangesCut',
    data: {
      ranges: [
        { from: 1.25, to: 1.5 },
        { from: 30, to: 31.001 },
      ],
      planned_on: 3,
      at: T,
    },
  },
  { type: 'CompositionMarkersAdded', data: { markers: [{ time: 2, label: 'pricing' }], planned_on: 4, at: T } },
  { type: 'CompositionAudioSet', data: { loudness_lufs: -16, noise_reduction: false, planned_on: 5, at: T } },
  { type: 'CompositionDeleted', data: { planned_on: 7, at: T } },
  {
    type: 'MediaTranscribed',
    data: {
      project_id: PROJECT,
      ref: 'cam-a.mp4',
      transcript_key: `transcripts/${'ab'.repeat(32)}.json`,
      sha256: 'ab'.repeat(32),
      word_count: 9000,
      language: null,
      transcriber: 'openai',
      job_id: JOB,
      transcribed_at: T,
    },
  },
  {
    type: 'CompositionAdded',
    data: {
      project_id: PROJECT,
      composition_id: `${PROJECT.slice(0, 30)}000002`,
      short_id: '1e7d4',
      name: 'Main',
      origin: `${JOB}#0`,
      created_at: T,
    },
  },
  {
    type: 'UploadReceived',
    data: {
      job_id: JOB,
      ref: 'cam-b.mp4',
      asset_id: USER,
      blob_key: `${DRIVE}/${PROJECT}/${USER}`,
      size_bytes: 5_000_000_000,
      received_at: T,
    },
  },
  {
    type: 'FolderCreated',
    data: { folder_id: USER, drive_id: DRIVE, path: 'Clients/Acme', name: 'Acme', parent_path: 'Clients', created_by: USER, created_at: T },
  },
  { type: 'UploadProgressed', data: { job_id: JOB, ref: 'cam-b.mp4', bytes: 2_500_000_000, total: 5_000_000_000, at: T } },
  { type: 'ProjectViewed', data: { project_id: PROJECT, user_id: USER, viewed_at: T } },
  { type: 'ProjectEdited', data: { project_id: PROJECT, composition_ids: [USER, DRIVE], job_id: JOB, edited_at: T } },
  {
    type: 'DeliveryScheduled',
    data: {
      delivery_id: USER,
      job_id: JOB,
      drive_id: DRIVE,
      project_id: PROJECT,
      url: 'https://hooks.example/x',
      due_at: T,
      scheduled_at: T,
    },
  },
  { type: 'DeliveryClaimed', data: { attempt: 1, worker_id: 'host-a:42', lease_until: T, at: T } },
  {
    type: 'DeliveryAttempted',
    data: { attempt: 1, at: T, status: 500, error: null, duration_ms: 120, outcome: 'retry', next_attempt_at: T },
  },
  { type: 'DeliveryRequested', data: { at: T, by: USER } },
  {
    type: 'ImportLinkIssued',
    data: {
      nonce: USER,
      drive_id: DRIVE,
      partner_drive_id: DRIVE,
      source_id: null,
      files: [
        { uri: 'https://cdn.example/a.wav?sig=x', name: 'Host', start_offset: { seconds: 1.5 } },
        { uri: 'https://cdn.example/b.wav', name: null, start_offset: null },
      ],
      expires_at: T,
      issued_at: T,
    },
  },
  {
    type: 'ImportLinkUsed',
    data: { nonce: USER, used_by_drive: DRIVE, used_by_user: USER, project_id: PROJECT, job_id: JOB, used_at: T },
  },
  {
    type: 'IdempotentResponseRecorded',
    data: {
      token_id: 't-1',
      fingerprint: 'c0ffee'.repeat(10) + 'beef',
      status: 201,
      body: JSON.stringify({ job_id: JOB, drive_id: DRIVE, project_id: PROJECT, project_url: URL }),
      recorded_at: T,
    },
  },
  { type: 'DriveCreated', data: { drive_id: DRIVE, name: 'Acme', webhook_secret: 'whsec_x', settings: DEFAULT_SETTINGS, created_at: T } },
  { type: 'DriveUpdated', data: { drive_id: DRIVE, changes: { name: 'Acme Inc', ai_credits: 50, media_seconds: null }, updated_at: T } },
  {
    type: 'TokenCreated',
    data: {
      token_id: 't-1',
      secret_hash: 'ab'.repeat(32),
      drive_id: DRIVE,
      user_id: USER,
      name: 'ci',
      created_at: T,
      first_name: 'Zoë',
      last_name: 'Ndiaye-Łukasz',
    },
  },
  { type: 'TokenRevoked', data: { token_id: 't-1', revoked_at: T } },
  {
    type: 'PublicationStarted',
    data: {
      publication_id: `${PROJECT}-video`,
      slug: 'Ab3_x-Yz09QwErTy',
      project_id: PROJECT,
      drive_id: DRIVE,
      composition_id: PROJECT,
      media_type: 'Video',
      access_level: 'unlisted',
      job_id: USER,
      published_by: { user_id: USER, first_name: 'Ada', last_name: 'Lovelace' },
      started_at: T,
    },
  },
  {
    type: 'PublicationRendered',
    data: {
      publication_id: `${PROJECT}-video`,
      slug: 'Ab3_x-Yz09QwErTy',
      job_id: USER,
      blob_key: `${DRIVE}/${PROJECT}/render-abc`,
      captions_blob_key: `${DRIVE}/${PROJECT}/render-abc.vtt`,
      content_type: 'video/mp4',
      size_bytes: 123456,
      duration_seconds: 59.966667,
      width: 1920,
      height: null,
      title: 'Interview',
      rendered_at: T,
    },
  },
  { type: 'ConversationStarted', data: { conversation_id: USER, project_id: PROJECT, drive_id: DRIVE, job_id: USER, started_at: T } },
  {
    type: 'AgentTurnRecorded',
    data: {
      conversation_id: USER,
      job_id: USER,
      prompt: 'rename this composition to Intro',
      model: 'builtin',
      tool_calls: [
        { id: 'call_1', name: 'rename_composition', arguments: '{"name":"Intro"}', result: '{"summary":"Renamed Main to Intro"}' },
      ],
      response: 'Renamed Main to Intro',
      project_changed: true,
      revisions: [
        { composition_id: PROJECT, before: 3, after: 4 },
        { composition_id: USER, before: null, after: 0 },
      ],
      ai_credits_used: 2.5,
      recorded_at: T,
    },
  },
];

const stored = (e: DomainEvent): StoredEvent => ({
  id: `evt-${e.type}`,
  type: e.type,
  data: e.data,
  metadata: { partition_key: PROJECT, correlation_id: 'req-1' },
  streamId: `stream-${e.type}`,
  revision: 3,
  position: '1234/1230',
  createdAt: T,
});
const event = (type: DomainEvent['type']) => stored(domainEvents.find((e) => e.type === type)!);
const throwsNaming = (fn: () => unknown, parts: string[]) =>
  assert.throws(
    fn,
    (err: Error) => parts.every((p) => err.message.includes(p)) || assert.fail(`expected ${parts.join('; ')} in: ${err.message}`),
  );

describe('Avro codec', () => {
  describe('round trip', () => {
    for (const e of domainEvents) {
      it(`decodes what it encoded: ${e.type}`, () => {
        const original = stored(e);
        assert.deepEqual(codec.decode(codec.encode(original)), original);
      });
    }

    it('has a schema and a realistic event above for every event type the domain writes', () => {
      const schemas = readdirSync(SCHEMA_DIR).filter((f) => f.endsWith('.avsc'));
      assert.deepEqual(schemas.map((f) => f.replace('.avsc', '')).sort(), [...EVENT_TYPES].sort());
      assert.deepEqual(domainEvents.map((e) => e.type).sort(), [...EVENT_TYPES].sort());
    });

    it('has a realistic event above for every schema in schemas/events', () => {
      const schemas = readdirSync(SCHEMA_DIR).filter((f) => f.endsWith('.avsc'));
      assert.deepEqual(schemas.map((f) => f.replace('.avsc', '')).sort(), domainEvents.map((e) => e.type).sort());
    });

    it('turns an undefined optional field into null', () => {
      const { language: _l, ...data } = event('MediaImported').data;
      assert.equal(codec.decode(codec.encode({ ...event('MediaImported'), data })).data.language, null);
    });
  });

  describe('wire format', () => {
    it('starts with the single-object marker and the writer schema fingerprint', () => {
      const buf = codec.encode(event('JobStarted'));
      assert.deepEqual([...buf.subarray(0, 2)], [0xc3, 0x01]);
      const schema = JSON.parse(readFileSync(join(SCHEMA_DIR, 'JobStarted.avsc'), 'utf8'));
      assert.equal(buf.readBigUInt64LE(2), fingerprintOf(Type.forSchema(schema)));
    });

    it('fingerprints the Parsing Canonical Form: full names, no docs, defaults or logical types', () => {
      const pcf = canonicalForm(Type.forSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, 'JobStopped.avsc'), 'utf8'))));
      assert.ok(pcf.startsWith('{"name":"media_project.events.JobStopped","type":"record","fields":[{"name":"id","type":"string"}'));
      assert.ok(pcf.includes('{"name":"metadata","type":"string"}'));
      assert.ok(pcf.includes('{"name":"project_url","type":["null","string"]}'));
      assert.doesNotMatch(pcf, /doc|default|logicalType|namespace|\s/);
    });

    // Vectors from the Avro project's share/test/data/schema-tests.txt (signed 64-bit values).
    const vectors: [string, string, bigint][] = [
      ['"null"', '"null"', 7195948357588979594n],
      [
        '{"fields":[{"type":"boolean","aliases":[],"name":"f1","default":true},{"order":"descending","name":"f2","doc":"Hello","type":"int"}],"type":"record","name":"foo"}',
        '{"name":"foo","type":"record","fields":[{"name":"f1","type":"boolean"},{"name":"f2","type":"int"}]}',
        -4860222112080293046n,
      ],
      [
        '{"namespace":"x.y.z", "type":"enum", "name":"foo", "doc":"foo bar", "symbols":["A1", "A2"]}',
        '{"name":"x.y.z.foo","type":"enum","symbols":["A1","A2"]}',
        -4448647247586288245n,
      ],
      [
        '{"name":"PigValue","type":"record","fields":[{"name":"value", "type":["null", "int", "long", "PigValue"]}]}',
        '{"name":"PigValue","type":"record","fields":[{"name":"value","type":["null","int","long","PigValue"]}]}',
        -1759257747318642341n,
      ],
    ];
    for (const [input, canonical, fingerprint] of vectors) {
      it(`computes CRC-64-AVRO and the canonical form of ${input.slice(0, 40)}`, () => {
        const type = Type.forSchema(JSON.parse(input));
        assert.equal(canonicalForm(type), canonical);
        assert.equal(BigInt.asIntN(64, crc64Avro(Buffer.from(canonical))), fingerprint);
        assert.equal(BigInt.asIntN(64, fingerprintOf(type)), fingerprint);
      });
    }
  });

  describe('schema evolution', () => {
    const NO_MEDIA_PROPERTIES = { width: null, height: null, frame_rate: null, rotation: null, sample_rate: null, channels: null };
    /** MediaImported data as written before the media properties of issue 21. */
    const withoutMediaProperties = (data: object) =>
      Object.fromEntries(Object.entries(data).filter(([key]) => !(key in NO_MEDIA_PROPERTIES))) as Record<string, unknown>;
    const dirs: string[] = [];
    const tempDir = () => dirs[dirs.push(mkdtempSync(join(tmpdir(), 'avsc-'))) - 1];
    afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

    /** MediaImported as it was before `language` existed. */
    const oldMediaImported = (): string => {
      const schema = JSON.parse(readFileSync(join(SCHEMA_DIR, 'MediaImported.avsc'), 'utf8'));
      const data = schema.fields.find((f: { name: string }) => f.name === 'data').type;
      data.fields = data.fields.filter((f: { name: string }) => f.name !== 'language');
      return JSON.stringify(schema);
    };
    const { language: _l, ...oldData } = event('MediaImported').data;
    const encodeWithOldSchema = (): Buffer => {
      const oldDir = tempDir();
      writeFileSync(join(oldDir, 'MediaImported.avsc'), oldMediaImported());
      return createAvroCodec({ schemaDir: oldDir }).encode({ ...event('MediaImported'), data: oldData });
    };
    const currentSchemasWithHistory = (file: string): string => {
      const dir = tempDir();
      cpSync(SCHEMA_DIR, dir, { recursive: true });
      mkdirSync(join(dir, 'history'), { recursive: true });
      writeFileSync(join(dir, 'history', file), oldMediaImported());
      return dir;
    };

    it('reads an event written with an older schema through the history folder, filling the new field from its default', () => {
      const buf = encodeWithOldSchema();
      const decoded = createAvroCodec({ schemaDir: currentSchemasWithHistory('MediaImported.1.avsc') }).decode(buf);
      assert.deepEqual(decoded, { ...event('MediaImported'), data: { ...oldData, language: null } });
    });

    it('reads a CompositionCreated written before markers existed (history v1) as having none', () => {
      const v1Dir = tempDir();
      cpSync(join(SCHEMA_DIR, 'history', 'CompositionCreated.v1.avsc'), join(v1Dir, 'CompositionCreated.avsc'));
      const { markers: _m, ...v1Data } = event('CompositionCreated').data;
      const buf = createAvroCodec({ schemaDir: v1Dir }).encode({ ...event('CompositionCreated'), data: v1Data });
      assert.deepEqual(codec.decode(buf), { ...event('CompositionCreated'), data: { ...v1Data, markers: [] } });
    });
    it('reads a CompositionReverted written before planned edits (history v1) with no audio settings, not deleted, planned on nothing', () => {
      const v1Dir = tempDir();
      cpSync(join(SCHEMA_DIR, 'history', 'CompositionReverted.v1.avsc'), join(v1Dir, 'CompositionReverted.avsc'));
      const { audio: _a, deleted: _d, planned_on: _p, ...v1Data } = event('CompositionReverted').data as Record<string, unknown>;
      const buf = createAvroCodec({ schemaDir: v1Dir }).encode({ ...event('CompositionReverted'), data: v1Data });
      const expected = { ...v1Data, audio: { loudness_lufs: null, noise_reduction: false }, deleted: false, planned_on: null };
      assert.deepEqual(codec.decode(buf), { ...event('CompositionReverted'), data: expected });
    });
    it('reads a CompositionRenamed written before planned edits (history v1) as planned on nothing', () => {
      const v1Dir = tempDir();
      cpSync(join(SCHEMA_DIR, 'history', 'CompositionRenamed.v1.avsc'), join(v1Dir, 'CompositionRenamed.avsc'));
      const { planned_on: _p, ...v1Data } = event('CompositionRenamed').data as Record<string, unknown>;
      const buf = createAvroCodec({ schemaDir: v1Dir }).encode({ ...event('CompositionRenamed'), data: v1Data });
      assert.deepEqual(codec.decode(buf), { ...event('CompositionRenamed'), data: { ...v1Data, planned_on: null } });
    });

    it('reads a JobAttemptFailed written before failures had codes (history v1) as having none', () => {
      const v1Dir = tempDir();
      cpSync(join(SCHEMA_DIR, 'history', 'JobAttemptFailed.v1.avsc'), join(v1Dir, 'JobAttemptFailed.avsc'));
      const { code: _c, ...v1Data } = event('JobAttemptFailed').data as Record<string, unknown>;
      const buf = createAvroCodec({ schemaDir: v1Dir }).encode({ ...event('JobAttemptFailed'), data: v1Data });
      assert.deepEqual(codec.decode(buf), { ...event('JobAttemptFailed'), data: { ...v1Data, code: null } });
    });

    it('reads a MediaImported written before asset ids existed (history v1) as having none', () => {
      const v1Dir = tempDir();
      cpSync(join(SCHEMA_DIR, 'history', 'MediaImported.v1.avsc'), join(v1Dir, 'MediaImported.avsc'));
      const { asset_id: _a, ...v1Data } = withoutMediaProperties(event('MediaImported').data) as Record<string, unknown>;
      const buf = createAvroCodec({ schemaDir: v1Dir }).encode({ ...event('MediaImported'), data: v1Data });
      assert.deepEqual(codec.decode(buf), { ...event('MediaImported'), data: { ...v1Data, asset_id: null, ...NO_MEDIA_PROPERTIES } });
    });

    it('reads a MediaImported written before media properties (history v2) as having none', () => {
      const v2Dir = tempDir();
      cpSync(join(SCHEMA_DIR, 'history', 'MediaImported.v2.avsc'), join(v2Dir, 'MediaImported.avsc'));
      const v2Data = withoutMediaProperties(event('MediaImported').data);
      const buf = createAvroCodec({ schemaDir: v2Dir }).encode({ ...event('MediaImported'), data: v2Data });
      assert.deepEqual(codec.decode(buf), { ...event('MediaImported'), data: { ...v2Data, ...NO_MEDIA_PROPERTIES } });
    });

    it('reads a ProjectCreated written before partner links (history v1) as having no partner', () => {
      const v1Dir = tempDir();
      cpSync(join(SCHEMA_DIR, 'history', 'ProjectCreated.v1.avsc'), join(v1Dir, 'ProjectCreated.avsc'));
      const { partner: _p, ...v1Data } = event('ProjectCreated').data as Record<string, unknown>;
      const buf = createAvroCodec({ schemaDir: v1Dir }).encode({ ...event('ProjectCreated'), data: v1Data });
      assert.deepEqual(codec.decode(buf), { ...event('ProjectCreated'), data: { ...v1Data, partner: null } });
    });

    it('reads a TokenCreated written before users had names (history v1) as having none', () => {
      const v1Dir = tempDir();
      cpSync(join(SCHEMA_DIR, 'history', 'TokenCreated.v1.avsc'), join(v1Dir, 'TokenCreated.avsc'));
      const { first_name: _f, last_name: _l, ...v1Data } = event('TokenCreated').data as Record<string, unknown>;
      const buf = createAvroCodec({ schemaDir: v1Dir }).encode({ ...event('TokenCreated'), data: v1Data });
      assert.deepEqual(codec.decode(buf), { ...event('TokenCreated'), data: { ...v1Data, first_name: null, last_name: null } });
    });

    it('refuses a message whose writer schema it does not know, naming the fingerprint', () => {
      const buf = encodeWithOldSchema();
      throwsNaming(() => codec.decode(buf), [`unknown Avro writer schema (fingerprint bytes ${buf.subarray(2, 10).toString('hex')})`]);
    });

    it('refuses a history schema whose record name does not match its file name', () => {
      const dir = currentSchemasWithHistory('JobStarted.1.avsc');
      throwsNaming(() => createAvroCodec({ schemaDir: dir }), ['describes record "media_project.events.MediaImported"']);
    });
  });

  describe('errors', () => {
    it('names every failing field path of an event that does not match its schema', () => {
      const bad = { ...event('CompositionCreated'), revision: -1.5 };
      const data = { ...bad.data, width: '1920', clips: [{ media: 'm', in: 0, out: 'end' }], extra: true };
      throwsNaming(
        () => codec.encode({ ...bad, data }),
        [
          'CompositionCreated evt-CompositionCreated does not match its Avro schema',
          'revision (expected long, got number)',
          'data.width (expected int, got string)',
          'data.clips.0.out (expected double, got string)',
          'data.extra (not in the schema)',
        ],
      );
    });

    it('names a missing required field and a wrong nullable one', () => {
      const { project_id: _p, ...data } = event('ProjectCreated').data;
      throwsNaming(
        () => codec.encode({ ...event('ProjectCreated'), data: { ...data, folder_path: 7 } }),
        ['data.project_id (expected string, got undefined)', 'data.folder_path (expected null | string, got number)'],
      );
    });

    it('refuses an event type without a schema', () => {
      throwsNaming(() => codec.encode({ ...event('JobStarted'), type: 'JobExploded' }), ['no Avro schema for event type "JobExploded"']);
    });

    it('refuses bytes without the single-object marker, or with an unknown fingerprint', () => {
      throwsNaming(() => codec.decode(Buffer.from('{"type":"JobStarted"}')), ['missing the C3 01 marker']);
      const buf = Buffer.from(codec.encode(event('JobStarted')));
      buf[9] ^= 0xff;
      throwsNaming(() => codec.decode(buf), ['unknown Avro writer schema']);
    });
  });
});
