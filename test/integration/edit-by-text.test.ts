import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { systemClock } from '../../lib/adapters/system/clock';
import { commandHandler } from '../../lib/app/command-handler';
import { createAuthenticator } from '../../lib/app/tenancy';
import { compositionDecider, type CompositionCommand } from '../../lib/domain/composition';
import type { Word } from '../../lib/domain/edl';
import { shortIdOf, streams } from '../../lib/domain/ids';
import { formatSeconds } from '../../services/query-api/web/html';
import { startHarness, type Harness } from '../fixtures/harness';
import { seedTranscribedProject } from '../fixtures/seed-project';
import { waitFor } from '../fixtures/wait';

/**
 * Issue 20: edit by text through HTTP (GET on the query API, PUT on the command API, behind one
 * gateway), and the read side of a deleted composition (project detail, search), on the embedded
 * adapters: real SQLite stores, the real projector, transcripts as real blobs.
 */
describe('edit by text and deleted compositions (HTTP, embedded adapters)', function () {
  this.timeout(60_000);
  let h: Harness;
  let me: string;
  const T = '2026-01-01T00:00:00.000Z';
  const word = (text: string, start: number, end: number): Word => ({ text, start, end, confidence: 0.9, speaker: null });
  // "so um we ship uh today the the price": the fillers are 0.4 s and 0.3 s long.
  const WORDS = [
    word('so', 0.2, 0.5),
    word('um', 1, 1.4),
    word('we', 1.5, 1.7),
    word('ship', 1.8, 2.2),
    word('uh', 3, 3.3),
    word('today', 3.5, 4),
    word('the', 4.2, 4.4),
    word('the', 4.6, 4.8),
    word('price', 5, 5.5),
  ];
  const TEXT = 'so um we ship uh today the the price';

  /** A project with one transcribed 10 s recording and one composition playing all of it, written through the domain. */
  const seedProject = (name: string) => seedTranscribedProject(h, { name, words: WORDS, duration: 10, createdBy: me });

  const path = (projectId: string, composition: string) => `/v1/projects/${projectId}/compositions/${composition}/transcript`;
  const read = async (projectId: string, composition: string, token = h.drive.token) =>
    h.http.get(path(projectId, composition)).set(h.auth(token));
  const put = (projectId: string, composition: string, body: unknown, token = h.drive.token) =>
    h.http
      .put(path(projectId, composition))
      .set(h.auth(token))
      .send(body as object);
  /** Edits on the composition's stream as an agent's turn would: at the revision read. */
  const edit = (compositionId: string, command: CompositionCommand) =>
    commandHandler(h.store, compositionDecider, streams.composition).handle(compositionId, command, {
      newId: randomUUID,
      metadata: { partition_key: compositionId },
    });
  const detail = async (projectId: string) => {
    const res = await h.http.get(`/v1/projects/${projectId}`).set(h.auth());
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body as { compositions: { id: string; name: string; duration: number }[] };
  };

  let talk: { projectId: string; compositionId: string };
  before(async () => {
    h = await startHarness({ processors: false });
    me = (await createAuthenticator({ store: h.store, clock: systemClock })(`Bearer ${h.drive.token}`)).userId;
    talk = await seedProject('Talk');
    await waitFor(async () => (await read(talk.projectId, talk.compositionId)).status === 200, { what: 'the composition projected' });
  });
  after(() => h.close());

  it('reads the derived transcript: words with ids and composition times, its text and the revision', async () => {
    const res = await read(talk.projectId, talk.compositionId);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(
      { ...res.body, words: res.body.words.slice(0, 2) },
      {
        project_id: talk.projectId,
        composition_id: talk.compositionId,
        revision: 0,
        duration: 10,
        text: TEXT,
        words: [
          { id: 'w0', text: 'so', start: 0.2, end: 0.5, speaker: null, confidence: 0.9 },
          { id: 'w1', text: 'um', start: 1, end: 1.4, speaker: null, confidence: 0.9 },
        ],
      },
    );
    assert.equal(res.body.words.length, WORDS.length);
    const byShortId = await read(talk.projectId, shortIdOf(talk.compositionId).toUpperCase());
    assert.equal(byShortId.status, 200, 'a short id, in any case');
    assert.equal(byShortId.body.composition_id, talk.compositionId);
  });

  it('refuses what it cannot read: 400 for a malformed id, 404 for an unknown composition, 403 for another drive', async () => {
    assert.equal((await read(talk.projectId, 'not-an-id')).status, 400);
    assert.equal((await read('nope', talk.compositionId)).status, 400);
    assert.equal((await read(talk.projectId, randomUUID())).status, 404);
    assert.equal((await read(talk.projectId, '00000')).status, 404);
    assert.equal((await read(talk.projectId, talk.compositionId, h.other.token)).status, 403);
    assert.equal((await put(talk.projectId, talk.compositionId, { text: TEXT, revision: 0 }, h.other.token)).status, 403);
  });

  it('refuses a body that is not text and revision, naming the field', async () => {
    const cases: [unknown, RegExp][] = [
      [{ revision: 0 }, /^text is required/],
      [{ text: 5, revision: 0 }, /^text is required/],
      [{ text: TEXT }, /^revision is required/],
      [{ text: TEXT, revision: -1 }, /^revision is required/],
      [{ text: TEXT, revision: 0, words: [] }, /^words is not a property/],
      [{ text: TEXT, revision: 7 }, /^revision 7 does not exist/],
    ];
    for (const [body, message] of cases) {
      const res = await put(talk.projectId, talk.compositionId, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error, 'invalid_input');
      assert.match(res.body.message, message, JSON.stringify(body));
    }
  });

  it('refuses an added or moved word, naming the first one, and changes nothing', async () => {
    const added = await put(talk.projectId, talk.compositionId, { text: 'so we ship bananas today', revision: 0 });
    assert.equal(added.status, 400);
    assert.equal(
      added.body.message,
      'text: word 4 "bananas" is not in the transcript (added or changed); editing by text only deletes words',
    );
    const moved = await put(talk.projectId, talk.compositionId, { text: 'so we today ship', revision: 0 });
    assert.equal(moved.status, 400);
    assert.equal(moved.body.message, 'text: word 4 "ship" is out of order (moved or repeated); editing by text only deletes words');
    assert.equal((await read(talk.projectId, talk.compositionId)).body.revision, 0);
  });

  it('cuts the deleted words in one edit, answers the new transcript, and the next reads show it', async () => {
    const res = await put(talk.projectId, talk.compositionId, { text: 'so we ship today the price', revision: 0 });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.text, 'so we ship today the price');
    assert.equal(res.body.revision, 1, 'one event for the whole edit');
    // um (1–1.4), uh (3–3.3) and the second "the" (4.6–4.8) are cut: 0.9 s shorter.
    assert.equal(res.body.duration, 9.1);
    assert.deepEqual(
      res.body.words.map((w: { text: string; start: number }) => [w.text, w.start]),
      [
        ['so', 0.2],
        ['we', 1.1],
        ['ship', 1.4],
        ['today', 2.8],
        ['the', 3.5],
        ['price', 4.1],
      ],
    );
    // Read your writes: the same token's next reads, on the query side, see the cut at once.
    const again = await read(talk.projectId, talk.compositionId);
    assert.deepEqual([again.body.revision, again.body.text], [1, 'so we ship today the price']);
    assert.equal((await detail(talk.projectId)).compositions[0].duration, 9.1);
    // The project page shows the composition as edited: its length, its clips, its words without the cut ones.
    const page = await h.http.get(`/${talk.projectId}`).set(h.auth());
    assert.equal(page.status, 200);
    const text = page.text.replace(/\s+/g, ' ');
    assert.match(text, new RegExp(`audio · ${formatSeconds(9.1)} · 4 clips`));
    assert.match(text, /so we ship today the price/);
    assert.doesNotMatch(text, /\bum\b|\buh\b|the the/);
  });

  it('answers 409 conflict when the composition moved on since the text was read, cutting nothing', async () => {
    const stale = await put(talk.projectId, talk.compositionId, { text: 'so', revision: 0 });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error, 'conflict');
    assert.equal((await read(talk.projectId, talk.compositionId)).body.text, 'so we ship today the price');
  });

  it('is undone by reverting to the revision before the edit', async () => {
    await edit(talk.compositionId, { type: 'ApplyEdits', edits: [{ kind: 'revert', to_revision: 0 }], planned_on: 1, now: T });
    const res = await waitFor(async () => {
      const r = await read(talk.projectId, talk.compositionId);
      return r.body.revision === 2 ? r : null;
    });
    assert.deepEqual([res.body.text, res.body.duration], [TEXT, 10]);
  });

  it('leaves a text with nothing deleted as it is, adding no revision', async () => {
    const res = await put(talk.projectId, talk.compositionId, { text: `  ${TEXT.replace(/ /g, '\n')} `, revision: 2 });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.revision, 2);
  });

  it('of two edits planned on one revision at once, applies one whole and refuses the other (409), never a mixture', async () => {
    const race = await seedProject('Race');
    await waitFor(async () => (await read(race.projectId, race.compositionId)).status === 200, { what: 'the composition projected' });
    const [a, b] = await Promise.all([
      put(race.projectId, race.compositionId, { text: 'so we ship uh today the the price', revision: 0 }),
      put(race.projectId, race.compositionId, { text: 'so um we ship today the price', revision: 0 }),
    ]);
    assert.deepEqual([a.status, b.status].sort(), [200, 409]);
    const winner = a.status === 200 ? a : b;
    const now = await read(race.projectId, race.compositionId);
    assert.deepEqual([now.body.revision, now.body.text], [1, winner.body.text]);
  });

  it("moves the project's updated_at: its detail, the list sorted by it, and search, at the next read", async () => {
    const older = await seedProject('Edited later');
    const newer = await seedProject('Not edited');
    await waitFor(async () => (await read(older.projectId, older.compositionId)).status === 200, { what: 'the composition projected' });
    await waitFor(async () => (await detail(newer.projectId)).compositions.length === 1, { what: 'the second project projected' });
    const before = (await detail(older.projectId)) as unknown as { updated_at: string };
    const res = await put(older.projectId, older.compositionId, { text: 'so we ship today the price', revision: 0 });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const project = await h.store.readStream(streams.project(older.projectId));
    const edited = project.at(-1)!;
    assert.deepEqual(
      [edited.type, edited.data.composition_ids, edited.data.job_id],
      ['ProjectEdited', [older.compositionId], null],
      'one ProjectEdited on the project stream, after the edit',
    );
    // Read your writes: the same token's next reads show the project as edited at that time.
    const after = (await detail(older.projectId)) as unknown as { updated_at: string };
    assert.equal(after.updated_at, edited.data.edited_at);
    assert.ok(after.updated_at > before.updated_at, `${after.updated_at} after ${before.updated_at}`);
    const list = await h.http.get('/v1/projects?sort=updated_at&direction=desc&limit=1').set(h.auth());
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.deepEqual(
      list.body.data.map((p: { name: string }) => p.name),
      ['Edited later'],
      'the project edited last comes first',
    );
    const since = await h.http.get(`/v1/search?query=edited&type=project&updated_after=${before.updated_at}`).set(h.auth());
    assert.deepEqual(
      since.body.results.map((r: { name?: string; project_name?: string }) => r.name ?? r.project_name),
      ['Edited later'],
    );
  });

  describe('a deleted composition', () => {
    let gone: { projectId: string; compositionId: string };
    before(async () => {
      gone = await seedProject('Doomed');
      await edit(gone.compositionId, { type: 'ApplyEdits', edits: [{ kind: 'rename', name: 'Zanzibar cut' }], planned_on: 0, now: T });
      const found = async () => {
        const res = await h.http.get('/v1/search?query=Zanzibar').set(h.auth());
        return (res.body.results as { type: string }[]).some((r) => r.type === 'composition');
      };
      await waitFor(found, { what: 'the renamed composition indexed' });
      await edit(gone.compositionId, { type: 'ApplyEdits', edits: [{ kind: 'delete' }], planned_on: 1, now: T });
      await waitFor(async () => (await read(gone.projectId, gone.compositionId)).status === 404, { what: 'the deletion projected' });
    });

    it('is gone from the project detail, its transcript and search', async () => {
      assert.deepEqual((await detail(gone.projectId)).compositions, []);
      const res = await h.http.get('/v1/search?query=Zanzibar').set(h.auth());
      assert.equal(res.status, 200);
      assert.deepEqual(
        (res.body.results as { type: string }[]).filter((r) => r.type === 'composition'),
        [],
      );
    });
    it('refuses an edit by text as not found', async () => {
      const res = await put(gone.projectId, gone.compositionId, { text: 'so', revision: 2 });
      assert.equal(res.status, 404);
      assert.equal(res.body.error, 'not_found');
    });
    it('comes back with a revert (undo of the deletion)', async () => {
      await edit(gone.compositionId, { type: 'ApplyEdits', edits: [{ kind: 'revert', to_revision: 1 }], planned_on: 2, now: T });
      await waitFor(async () => (await detail(gone.projectId)).compositions.length === 1, { what: 'the composition back' });
      assert.equal((await detail(gone.projectId)).compositions[0].name, 'Zanzibar cut');
    });
  });
});
