import assert from 'node:assert/strict';
import type { ProjectModel } from '../../lib/domain/agent/edits';
import { createToolbox } from '../../lib/app/agent-toolbox';
import { AGENT_TOOLS, type ToolContext } from '../../lib/domain/agent/tools';
import { passageAbout } from '../../lib/domain/agent/tools/compositions';
import { retakes } from '../../lib/domain/agent/tools/retakes';
import { clock } from '../../lib/domain/agent/tools/tool';
import { compositionDuration, compositionTranscript } from '../../lib/domain/edl';
import { clip, composition, context, MAIN_ID, OUTRO_ID, talkModel, TALK_WORDS, word } from '../fixtures/agent-model';

const toolbox = createToolbox();

/** given(model).when(tool, args) → the outcome and the model after it; a refusal fails the test. */
function when(model: ProjectModel, name: string, args: Record<string, unknown> = {}, ctx: ToolContext = context()) {
  const result = toolbox.run(model, { name, arguments: args }, ctx);
  if (!result.ok) assert.fail(`${name} refused: ${result.error}`);
  return { ...result.outcome, model: result.model, main: result.model.compositions.find((c) => c.composition_id === MAIN_ID)! };
}
function refused(model: ProjectModel, name: string, args: Record<string, unknown>, ctx: ToolContext = context()): string {
  const result = toolbox.run(model, { name, arguments: args }, ctx);
  assert.equal(result.ok, false, `${name} ${JSON.stringify(args)} should be refused`);
  return (result as { error: string }).error;
}
const textOf = (model: ProjectModel, id = MAIN_ID) => {
  const c = model.compositions.find((x) => x.composition_id === id)!;
  return compositionTranscript(c.clips, () => TALK_WORDS)
    .map((w) => w.text)
    .join(' ');
};

describe('agent tools (given a project model, when a tool runs, then…)', () => {
  describe('the toolbox', () => {
    it('shows every tool with a name, a description and an object schema', () => {
      assert.equal(toolbox.schemas.length, AGENT_TOOLS.length);
      for (const s of toolbox.schemas) {
        assert.match(s.name, /^[a-z_]+$/);
        assert.ok(s.description.length > 10, s.name);
        assert.equal(s.parameters.type, 'object');
      }
    });

    it('refuses bad arguments with a message naming the argument, and an unknown tool with the list', () => {
      assert.equal(refused(talkModel(), 'cut_ranges', {}), 'cut_ranges: arguments needs "ranges"');
      assert.equal(
        refused(talkModel(), 'cut_ranges', { ranges: [{ from: 1, to: 'x' }] }),
        'cut_ranges: arguments.ranges[0].to must be number',
      );
      assert.equal(
        refused(talkModel(), 'rename_composition', { name: 'A', colour: 1 }),
        'rename_composition: arguments has an unknown property "colour"',
      );
      assert.match(refused(talkModel(), 'explode', {}), /^there is no tool "explode"; the tools are read_transcript, cut_ranges, trim/);
      assert.match(refused(talkModel(), 'set_audio', { loudness_lufs: 3 }), /arguments\.loudness_lufs must be <= -5/);
    });

    it('names the composition by name (any case), id or short id, and refuses an unknown or ambiguous one', () => {
      const model = talkModel([composition(), composition({ composition_id: OUTRO_ID, short_id: 'fghij', name: 'Outro' })]);
      for (const named of ['outro', OUTRO_ID, 'fghij']) {
        assert.equal(when(model, 'rename_composition', { name: 'End', composition: named }).summary, 'Renamed Outro to End');
      }
      assert.equal(
        refused(model, 'rename_composition', { name: 'X', composition: 'Nope' }),
        'rename_composition: no composition is named "Nope"; the project has "Main", "Outro"',
      );
      const twins = talkModel([composition(), composition({ composition_id: OUTRO_ID, short_id: 'fghij' })]);
      assert.match(refused(twins, 'rename_composition', { name: 'X', composition: 'main' }), /2 compositions are named "main"/);
    });

    it('applies each call to the model it returns, so a later call sees the earlier one', () => {
      const first = when(talkModel(), 'remove_words', { fillers: true });
      const second = when(first.model, 'remove_words', { fillers: true });
      assert.deepEqual(second.changes, []);
      assert.equal(second.summary, 'Found no filler words in Main; nothing changed');
      assert.equal(first.main.revision, 2, 'every edit of a turn is planned on the revision the turn read');
    });
  });

  describe('read_transcript', () => {
    it('reads words in composition time, optionally between two times', () => {
      const model = talkModel([composition({ clips: [clip('talk.wav', 7, 10.4)] })]);
      const { data, summary, changes } = when(model, 'read_transcript', {});
      assert.deepEqual(changes, []);
      assert.equal(summary, 'Read 8 words of Main (0:03.4)');
      assert.deepEqual((data as { words: unknown[] }).words.slice(0, 2), [
        [0, 0.2, 'The'],
        [0.2, 0.5, 'price'],
      ]);
      const part = when(model, 'read_transcript', { from: 1.5, to: 2.2 }).data as { words: unknown[] };
      assert.deepEqual(part.words, [
        [1.5, 1.7, 'The'],
        [1.7, 2, 'price'],
        [2, 2.3, 'is'],
      ]);
    });
  });

  describe('cut_ranges and keep_range', () => {
    it('cuts several ranges at once in one edit', () => {
      const { changes, summary, main } = when(talkModel(), 'cut_ranges', {
        ranges: [
          { from: 20, to: 30 },
          { from: 0, to: 2.5 },
          { from: 2, to: 3 },
        ],
      });
      assert.deepEqual(changes, [
        {
          composition_id: MAIN_ID,
          edit: {
            kind: 'cut',
            ranges: [
              { from: 0, to: 3 },
              { from: 20, to: 30 },
            ],
          },
        },
      ]);
      assert.equal(summary, 'Cut 2 ranges (13.0 s) from Main; it is now 0:17.0');
      assert.deepEqual(main.clips, [clip('talk.wav', 3, 20)]);
    });

    it('refuses a range that ends before it starts, and cuts nothing past the end', () => {
      assert.equal(
        refused(talkModel(), 'cut_ranges', { ranges: [{ from: 4, to: 2 }] }),
        'cut_ranges: ranges[0]: "to" (2) must be after "from" (4)',
      );
      assert.deepEqual(when(talkModel(), 'cut_ranges', { ranges: [{ from: 40, to: 50 }] }).changes, []);
    });

    it('trims the start and the end', () => {
      const { changes, summary } = when(talkModel(), 'trim', { start: 5, end: 2.5 });
      assert.deepEqual(changes, [
        {
          composition_id: MAIN_ID,
          edit: {
            kind: 'cut',
            ranges: [
              { from: 0, to: 5 },
              { from: 27.5, to: 30 },
            ],
          },
        },
      ]);
      assert.equal(summary, 'Trimmed the first 5 s and the last 2.5 s of Main; it is now 0:22.5');
      assert.match(refused(talkModel(), 'trim', { start: 20, end: 10 }), /would leave nothing of Main/);
      assert.match(refused(talkModel(), 'trim', {}), /give "start" or "end"/);
    });

    it('keeps only a range', () => {
      const { changes, summary, main } = when(talkModel(), 'keep_range', { from: 30 - 25, to: 70 });
      assert.deepEqual(changes, [{ composition_id: MAIN_ID, edit: { kind: 'keep', from: 5, to: 30 } }]);
      assert.equal(summary, 'Kept only 0:05.0 to 0:30.0 of Main; it is now 0:25.0');
      assert.deepEqual(main.clips, [clip('talk.wav', 5, 30)]);
      assert.match(refused(talkModel(), 'keep_range', { from: 31, to: 40 }), /"from" \(31 s\) is past the end of Main \(0:30.0\)/);
    });
  });

  describe('remove_words', () => {
    it('removes filler words (um, uh, "you know", "I mean") by exactly their spans', () => {
      const { changes, summary, model } = when(talkModel(), 'remove_words', { fillers: true });
      assert.deepEqual(changes, [
        {
          composition_id: MAIN_ID,
          edit: {
            kind: 'cut',
            ranges: [
              { from: 0.5, to: 0.8 },
              { from: 3.8, to: 4 },
              { from: 11, to: 11.4 },
              { from: 13, to: 13.4 },
            ],
          },
        },
      ]);
      assert.equal(summary, 'Removed 4 filler words (1.3 s) from Main; it is now 0:28.7');
      assert.doesNotMatch(textOf(model), /\bum\b|\buh\b|You know|I mean/);
    });

    it('removes the earlier of repeated words, and listed words', () => {
      const repeated = when(talkModel(), 'remove_words', { repeated: true });
      assert.equal(repeated.summary, 'Removed 1 repeated word (0.2 s) from Main; it is now 0:29.8');
      assert.match(textOf(repeated.model), /welcome to the show\./);
      const listed = when(talkModel(), 'remove_words', { words: ['cheap', 'really cheap'] });
      assert.equal(listed.summary, 'Removed 2 listed words (1.6 s) from Main; it is now 0:28.4');
    });

    it('finds the words where the clips put them (composition time), not in cut media', () => {
      // talk.wav 3.5–14.5 then 0–3: "uh" at media 3.8 is at composition 0.3, "um" at media 0.5 at 11.5.
      const model = talkModel([composition({ clips: [clip('talk.wav', 3.5, 14.5), clip('talk.wav', 0, 3)] })]);
      const { changes } = when(model, 'remove_words', { fillers: true });
      assert.deepEqual((changes[0] as { edit: { ranges: unknown } }).edit.ranges, [
        { from: 0.3, to: 0.5 },
        { from: 7.5, to: 7.9 },
        { from: 9.5, to: 9.9 },
        { from: 11.5, to: 11.8 },
      ]);
    });

    it('refuses a call that names nothing to remove', () => {
      assert.match(refused(talkModel(), 'remove_words', {}), /say which words to remove/);
    });
  });

  describe('remove_retakes', () => {
    it('cuts the earlier take of a sentence started again, from its first word to the retake', () => {
      const { changes, summary, model } = when(talkModel(), 'remove_retakes');
      assert.deepEqual(changes, [{ composition_id: MAIN_ID, edit: { kind: 'cut', ranges: [{ from: 7, to: 8.5 }] } }]);
      assert.equal(summary, 'Removed 1 retake (1.5 s) from Main; it is now 0:28.5');
      assert.match(textOf(model), /pricing\. The price is ten dollars\./);
    });

    it('keeps the last of three takes, and a take with a word broken off counts', () => {
      const words = [
        word('So', 0, 0.2),
        word('the', 0.2, 0.4),
        word('So', 1, 1.2),
        word('the', 1.2, 1.4),
        word('pri', 1.4, 1.6),
        word('So', 2.5, 2.7),
        word('the', 2.7, 2.9),
        word('price', 2.9, 3.3),
        word('is', 3.3, 3.5),
        word('ten.', 3.5, 4),
      ];
      assert.deepEqual(retakes(words), [
        [0, 2],
        [2, 5],
      ]);
    });

    it('counts a take that trails off in a filler, measuring the window from its first word', () => {
      const words = [
        word('So', 0, 0.2),
        word('the', 0.2, 0.4),
        word('um', 0.6, 0.9),
        word('So', 1.5, 1.7),
        word('the', 1.7, 1.9),
        word('price.', 1.9, 2.3),
      ];
      assert.deepEqual(retakes(words), [[0, 3]]);
      assert.deepEqual(retakes(words, 1.4), [], 'the retake starts 1.5 s after the take');
    });

    it('leaves sentences that only open alike, a retake outside the window, and a single repeated word', () => {
      const alike = [
        word('I', 0, 0.2),
        word('think', 0.2, 0.5),
        word('we', 0.5, 0.7),
        word('go.', 0.7, 1),
        word('I', 1.5, 1.7),
        word('think', 1.7, 2),
        word('it', 2, 2.2),
        word('rains.', 2.2, 2.6),
      ];
      assert.deepEqual(retakes(alike), []);
      const late = [word('The', 0, 0.2), word('price', 0.2, 0.5), word('The', 12, 12.2), word('price', 12.2, 12.5), word('is', 12.5, 13)];
      assert.deepEqual(retakes(late), []);
      assert.deepEqual(retakes(late, 15), [[0, 2]]);
      const single = [word('So', 0, 0.2), word('So', 1, 1.2), word('what?', 1.2, 1.6)];
      assert.deepEqual(retakes(single), []);
    });
  });

  describe('remove_silences and shorten_pauses', () => {
    it('cuts silences longer than N seconds, whole', () => {
      const { changes, summary, main } = when(talkModel(), 'remove_silences', { longer_than: 1 });
      assert.deepEqual(changes, [
        {
          composition_id: MAIN_ID,
          edit: {
            kind: 'cut',
            ranges: [
              { from: 14.5, to: 20 },
              { from: 21, to: 30 },
            ],
          },
        },
      ]);
      assert.equal(summary, 'Cut 2 silences longer than 1 s (14.5 s removed) in Main; it is now 0:15.5');
      assert.deepEqual(main.clips, [clip('talk.wav', 0, 14.5), clip('talk.wav', 20, 21)]);
    });

    it('measures a silence in the composition: the two sides of a cut join into one', () => {
      // Media 14.5–20 is silent; the composition plays 0–16 then 19–21: 14.5–16 and 16–17 join (2.5 s).
      const model = talkModel([composition({ clips: [clip('talk.wav', 0, 16), clip('talk.wav', 19, 21)] })]);
      const { changes } = when(model, 'remove_silences', { longer_than: 2 });
      assert.deepEqual((changes[0] as { edit: { ranges: unknown } }).edit.ranges, [{ from: 14.5, to: 17 }]);
    });

    it('shortens pauses longer than N seconds to N, keeping half on each side', () => {
      const { changes, summary } = when(talkModel(), 'shorten_pauses', { to: 0.5 });
      assert.deepEqual((changes[0] as { edit: { ranges: unknown } }).edit.ranges, [
        { from: 3.05, to: 3.25 },
        { from: 6.25, to: 6.75 },
        { from: 14.75, to: 19.75 },
        { from: 21.25, to: 29.75 },
      ]);
      assert.equal(summary, 'Shortened 4 pauses to 0.5 s (14.2 s removed) in Main; it is now 0:15.8');
    });

    it('refuses when a media file of the composition has not been measured', () => {
      assert.match(
        refused(talkModel(), 'remove_silences', { longer_than: 1 }, context({ silences: new Map() })),
        /the silences of "talk.wav" have not been measured/,
      );
    });
  });

  describe('make_clip', () => {
    it('makes a new composition of the sentences around a phrase, leaving the source as it was', () => {
      const { changes, summary, model } = when(talkModel(), 'make_clip', { phrase: 'Pricing' });
      assert.deepEqual(changes, [
        {
          create: {
            composition_id: '0190c001-0000-7000-8000-000000000000',
            name: 'About Pricing',
            clips: [clip('talk.wav', 3.5, 21)],
            markers: [],
          },
        },
      ]);
      assert.equal(summary, 'Made About Pricing from 0:03.5 to 0:21.0 of Main (2 mentions of "Pricing"); it lasts 0:17.5');
      assert.deepEqual(model.compositions[0], composition());
    });

    it('picks the passage with the most mentions when mentions are far apart', () => {
      const words = [
        word('We', 0, 0.3),
        word('sell', 0.3, 0.6),
        word('pricing.', 0.6, 1),
        word('Other', 40, 40.5),
        word('stuff.', 40.5, 41),
        word('Pricing', 80, 80.5),
        word('is', 80.5, 80.7),
        word('ten.', 80.7, 81),
        word('Pricing', 82, 82.5),
        word('matters.', 82.5, 83),
      ];
      assert.deepEqual(passageAbout(words, 'pricing'), { from: 80, to: 83, mentions: 2 });
      assert.equal(passageAbout(words, 'weather'), null);
    });

    it('refuses a phrase that is not said', () => {
      assert.equal(refused(talkModel(), 'make_clip', { phrase: 'weather' }), 'make_clip: "weather" is not said in Main');
    });
  });

  describe('rename, create, duplicate, delete', () => {
    it('renames', () => {
      const { changes, main } = when(talkModel(), 'rename_composition', { name: 'Intro' });
      assert.deepEqual(changes, [{ composition_id: MAIN_ID, edit: { kind: 'rename', name: 'Intro' } }]);
      assert.equal(main.name, 'Intro');
      assert.deepEqual(when(talkModel(), 'rename_composition', { name: 'Main' }).changes, []);
    });

    it('creates an empty composition or one of whole media files, and refuses an unknown file', () => {
      const empty = when(talkModel(), 'create_composition', { name: 'Draft' });
      assert.equal(empty.summary, 'Created Draft (empty)');
      const full = when(talkModel(), 'create_composition', { name: 'Both', media: ['b-roll.mp4', 'talk.wav'] });
      assert.deepEqual(full.changes, [
        {
          create: {
            composition_id: '0190c001-0000-7000-8000-000000000000',
            name: 'Both',
            clips: [clip('b-roll.mp4', 0, 12), clip('talk.wav', 0, 30)],
            markers: [],
          },
        },
      ]);
      assert.equal(full.summary, 'Created Both (of 2 media files, 0:42.0)');
      assert.equal(full.model.compositions[1].short_id, '0190c');
      assert.match(
        refused(talkModel(), 'create_composition', { name: 'X', media: ['nope.wav'] }),
        /"nope.wav" is not a media file of the project/,
      );
      assert.equal(refused(talkModel(), 'create_composition', { name: '  ' }), 'create_composition: the name is blank');
    });

    it('duplicates clips and markers under a new name', () => {
      const model = talkModel([composition({ markers: [{ time: 1, label: 'a' }] })]);
      const { changes, summary } = when(model, 'duplicate_composition', {});
      assert.deepEqual(changes, [
        {
          create: {
            composition_id: '0190c001-0000-7000-8000-000000000000',
            name: 'Main copy',
            clips: [clip('talk.wav', 0, 30)],
            markers: [{ time: 1, label: 'a' }],
          },
        },
      ]);
      assert.equal(summary, 'Duplicated Main as Main copy (0:30.0)');
    });

    it('deletes a named composition only', () => {
      const { changes, model } = when(talkModel(), 'delete_composition', { composition: 'Main' });
      assert.deepEqual(changes, [{ composition_id: MAIN_ID, edit: { kind: 'delete' } }]);
      assert.deepEqual(model.compositions, []);
      assert.match(refused(talkModel(), 'delete_composition', {}), /needs "composition"/);
    });
  });

  describe('add_markers', () => {
    it('adds a marker at a time, and refuses one past the end', () => {
      const { changes, summary } = when(talkModel(), 'add_markers', { at: 12.5, label: 'Chapter 2' });
      assert.deepEqual(changes, [
        { composition_id: MAIN_ID, edit: { kind: 'add_markers', markers: [{ time: 12.5, label: 'Chapter 2' }] } },
      ]);
      assert.equal(summary, 'Added 1 marker "Chapter 2" to Main at 0:12.5');
      assert.match(refused(talkModel(), 'add_markers', { at: 31 }), /past the end of Main/);
      assert.match(refused(talkModel(), 'add_markers', {}), /exactly one of "at"/);
    });

    it('adds a marker at each mention of a phrase', () => {
      const { changes, summary, main } = when(talkModel(), 'add_markers', { phrase: 'pricing' });
      assert.deepEqual(changes, [
        {
          composition_id: MAIN_ID,
          edit: {
            kind: 'add_markers',
            markers: [
              { time: 5.4, label: 'pricing' },
              { time: 20, label: 'pricing' },
            ],
          },
        },
      ]);
      assert.equal(summary, 'Added 2 markers "pricing" to Main at 0:05.4, 0:20.0');
      assert.equal(main.markers.length, 2);
      const often = talkModel([composition({ clips: [clip('talk.wav', 0, 30), clip('talk.wav', 0, 30), clip('talk.wav', 0, 30)] })]);
      assert.equal(
        when(often, 'add_markers', { phrase: 'pricing', label: 'P' }).summary,
        'Added 6 markers "P" to Main at 0:05.4, 0:20.0, 0:35.4, 0:50.0, 1:05.4 and 1 more',
      );
    });
  });

  describe('set_audio', () => {
    it('sets the loudness target and noise reduction, keeping an omitted one', () => {
      const first = when(talkModel(), 'set_audio', { loudness_lufs: -16 });
      assert.deepEqual(first.changes, [
        { composition_id: MAIN_ID, edit: { kind: 'set_audio', loudness_lufs: -16, noise_reduction: false } },
      ]);
      assert.equal(first.summary, 'Set the audio of Main: loudness -16 LUFS, noise reduction off');
      const second = when(first.model, 'set_audio', { noise_reduction: true });
      assert.deepEqual(second.main.audio, { loudness_lufs: -16, noise_reduction: true });
      assert.deepEqual(when(second.model, 'set_audio', { noise_reduction: true }).changes, []);
    });
  });

  describe('undo', () => {
    it('reverts what the last turn changed and deletes what it created, restoring the clip list exactly', () => {
      const before = composition();
      const turn = when(when(talkModel(), 'remove_words', { fillers: true }).model, 'make_clip', { phrase: 'pricing' });
      const created = turn.model.compositions[1].composition_id;
      const ctx = context({
        lastTurn: [
          { composition_id: MAIN_ID, revision_before: 2, before },
          { composition_id: created, revision_before: null, before: null },
        ],
      });
      const undone = when(turn.model, 'undo', {}, ctx);
      assert.deepEqual(undone.changes, [
        { composition_id: MAIN_ID, edit: { kind: 'revert', to_revision: 2 } },
        { composition_id: created, edit: { kind: 'delete' } },
      ]);
      assert.equal(undone.summary, 'Undid the last turn (2 compositions): Main is back to 0:30.0; deleted About pricing, which it created');
      assert.deepEqual(
        undone.model.compositions.map((c) => c.clips),
        [before.clips],
      );
      assert.equal(undone.main.revision, 2, 'planned on the revision the turn read');
    });

    it('brings back a composition the last turn deleted: a revert of it, which the turn plans on the deciders', () => {
      const before = composition();
      const gone = { ...talkModel(), compositions: [] };
      const ctx = context({ lastTurn: [{ composition_id: MAIN_ID, revision_before: 2, before }] });
      const planned = toolbox.plan(gone, { name: 'undo', arguments: {} }, ctx);
      assert.ok(planned.ok, JSON.stringify(planned));
      assert.deepEqual(planned.outcome.changes, [{ composition_id: MAIN_ID, edit: { kind: 'revert', to_revision: 2 } }]);
      assert.equal(planned.outcome.summary, 'Undid the last turn (1 composition): restored Main (0:30.0)');
    });

    it('refuses when there is no turn to undo', () => {
      assert.match(refused(talkModel(), 'undo', {}), /no earlier turn/);
    });
  });

  it('formats durations as m:ss.s and h:mm:ss.s', () => {
    assert.deepEqual(
      [clock(0), clock(5.04), clock(192.6), clock(59.96), clock(3723.4)],
      ['0:00.0', '0:05.0', '3:12.6', '1:00.0', '1:02:03.4'],
    );
    assert.equal(compositionDuration(composition().clips), 30);
  });
});
