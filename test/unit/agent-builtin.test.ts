import assert from 'node:assert/strict';
import { parseTime } from '../../lib/adapters/agent/builtin-phrasings';
import { createBuiltinModel } from '../../lib/adapters/agent/builtin';
import { PHRASINGS } from '../../lib/adapters/agent/builtin-phrasings';
import { createToolbox } from '../../lib/app/agent-toolbox';
import type { ModelStep, TurnMessage } from '../../lib/ports/agent-model';

const { schemas } = createToolbox();
const model = createBuiltinModel();
const signal = new AbortController().signal;
const step = (messages: TurnMessage[], tools = schemas): Promise<ModelStep> => model.next({ messages, tools, signal });
/** The calls the first step of a turn asks for, without their ids. */
async function callsFor(prompt: string, earlier: TurnMessage[] = []) {
  const next = await step([{ role: 'system', content: 'You edit compositions.' }, ...earlier, { role: 'user', content: prompt }]);
  assert.equal(next.kind, 'tool_calls', `"${prompt}" → ${JSON.stringify(next)}`);
  return next.kind === 'tool_calls' ? next.calls.map((c) => ({ name: c.name, arguments: c.arguments })) : [];
}
const call = (name: string, args: Record<string, unknown> = {}) => ({ name, arguments: args });

/** Every phrasing of the table, as the docs list it, and what it means. */
const TABLE: [string, ReturnType<typeof call>[]][] = [
  ['remove filler words', [call('remove_words', { fillers: true })]],
  ['Remove the ums and uhs.', [call('remove_words', { fillers: true })]],
  ['cut fillers', [call('remove_words', { fillers: true })]],
  ['remove repeated words', [call('remove_words', { repeated: true })]],
  ['remove stutters', [call('remove_words', { repeated: true })]],
  ['remove retakes', [call('remove_retakes')]],
  ['cut the false starts', [call('remove_retakes')]],
  ['cut silences longer than 1.5 seconds', [call('remove_silences', { longer_than: 1.5 })]],
  ['remove silences', [call('remove_silences', { longer_than: 1 })]],
  ['remove dead air longer than 2 s', [call('remove_silences', { longer_than: 2 })]],
  ['remove silences longer than 500 ms', [call('remove_silences', { longer_than: 0.5 })]],
  ['shorten pauses to 0.5 seconds', [call('shorten_pauses', { to: 0.5 })]],
  ['tighten the pauses', [call('shorten_pauses', { to: 0.5 })]],
  ['trim the first 5 seconds', [call('trim', { start: 5 })]],
  ['cut off the first 10 s', [call('trim', { start: 10 })]],
  ['trim the first five seconds', [call('trim', { start: 5 })]],
  ['trim the last 3 seconds', [call('trim', { end: 3 })]],
  ['keep only 00:30 to 01:10', [call('keep_range', { from: 30, to: 70 })]],
  ['keep just from 1:00 to 2:30', [call('keep_range', { from: 60, to: 150 })]],
  ['cut 1:00 to 1:30', [call('cut_ranges', { ranges: [{ from: 60, to: 90 }] })]],
  ['remove from 10 s to 20 s', [call('cut_ranges', { ranges: [{ from: 10, to: 20 }] })]],
  ['remove the word "basically"', [call('remove_words', { words: ['basically'] })]],
  ['cut every "like"', [call('remove_words', { words: ['like'] })]],
  ['rename this composition to Intro', [call('rename_composition', { name: 'Intro' })]],
  ['call it Intro', [call('rename_composition', { name: 'Intro' })]],
  ['call it "Final cut"', [call('rename_composition', { name: 'Final cut' })]],
  ['rename Outro to End', [call('rename_composition', { composition: 'Outro', name: 'End' })]],
  ['add a marker at every mention of pricing', [call('add_markers', { phrase: 'pricing' })]],
  ['mark each mention of "the launch"', [call('add_markers', { phrase: 'the launch' })]],
  ['add a marker at 1:30 called Chapter 2', [call('add_markers', { at: 90, label: 'Chapter 2' })]],
  ['add a marker at 12 seconds', [call('add_markers', { at: 12 })]],
  ['make a clip of the part about pricing', [call('make_clip', { phrase: 'pricing' })]],
  ['make a clip about pricing called Teaser', [call('make_clip', { phrase: 'pricing', name: 'Teaser' })]],
  ['duplicate this composition', [call('duplicate_composition')]],
  ['make a copy called Backup', [call('duplicate_composition', { name: 'Backup' })]],
  ['create a composition called Draft', [call('create_composition', { name: 'Draft' })]],
  ['delete the composition Draft', [call('delete_composition', { composition: 'Draft' })]],
  ['enhance the audio', [call('set_audio', { loudness_lufs: -16, noise_reduction: true })]],
  ['normalize the loudness to -16 LUFS', [call('set_audio', { loudness_lufs: -16 })]],
  ['normalize the audio', [call('set_audio', { loudness_lufs: -16 })]],
  ['set the loudness to -14', [call('set_audio', { loudness_lufs: -14 })]],
  ['reduce the background noise', [call('set_audio', { noise_reduction: true })]],
  ['turn on noise reduction', [call('set_audio', { noise_reduction: true })]],
  ['turn off noise reduction', [call('set_audio', { noise_reduction: false })]],
  ['undo that', [call('undo')]],
  ['revert the last change', [call('undo')]],
  ['show the transcript', [call('read_transcript')]],
];

describe('builtin agent model', () => {
  describe('reads every phrasing of its table into tool calls', () => {
    for (const [prompt, expected] of TABLE) {
      it(`"${prompt}"`, async () => assert.deepEqual(await callsFor(prompt), expected));
    }
  });

  it('has a test above for every example the docs list', () => {
    const tested = new Set(TABLE.map(([p]) => p.toLowerCase().replace(/\.$/, '')));
    for (const p of PHRASINGS) for (const e of p.examples) assert.ok(tested.has(e.toLowerCase()), `"${e}" is tested`);
  });

  it('reads a composition named at the end, and several clauses joined', async () => {
    assert.deepEqual(await callsFor('remove filler words from Outro'), [call('remove_words', { fillers: true, composition: 'Outro' })]);
    assert.deepEqual(await callsFor('keep only 0:30 to 1:10 in the composition Outro'), [
      call('keep_range', { from: 30, to: 70, composition: 'Outro' }),
    ]);
    assert.deepEqual(await callsFor('Please remove filler words, cut silences longer than 2 seconds and then rename it to Clean.'), [
      call('remove_words', { fillers: true }),
      call('remove_silences', { longer_than: 2 }),
      call('rename_composition', { name: 'Clean' }),
    ]);
  });

  it('"do the same for Outro" repeats the previous turn\'s edits on Outro', async () => {
    const earlier: TurnMessage[] = [
      { role: 'user', content: 'remove filler words and trim the first 5 seconds' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'a', name: 'remove_words', arguments: { fillers: true } },
          { id: 'b', name: 'trim', arguments: { start: 5 } },
        ],
      },
      { role: 'tool', tool_call_id: 'a', content: '{"summary":"Removed 2 filler words (0.5 s) from Main; it is now 0:29.5"}' },
      { role: 'tool', tool_call_id: 'b', content: '{"summary":"Trimmed the first 5.0 s of Main; it is now 0:24.5"}' },
      { role: 'assistant', content: 'Removed 2 filler words … Trimmed …' },
    ];
    assert.deepEqual(await callsFor('do the same for Outro', earlier), [
      call('remove_words', { fillers: true, composition: 'Outro' }),
      call('trim', { start: 5, composition: 'Outro' }),
    ]);
    const none = await step([{ role: 'user', content: 'Do the same for Outro' }]);
    assert.deepEqual(none, { kind: 'final', text: 'There is no earlier edit to do again for Outro.' });
  });

  it('answers with the tool summaries once the results are in', async () => {
    const next = await step([
      { role: 'user', content: 'remove filler words and rename it to Intro' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'x1', name: 'remove_words', arguments: { fillers: true } },
          { id: 'x2', name: 'rename_composition', arguments: { name: 'Intro' } },
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'x1',
        content: JSON.stringify({ summary: 'Removed 7 filler words (2.4 s) from Main; it is now 3:12.6' }),
      },
      { role: 'tool', tool_call_id: 'x2', content: JSON.stringify({ error: 'rename_composition: the new name is blank' }) },
    ]);
    assert.deepEqual(next, {
      kind: 'final',
      text: 'Removed 7 filler words (2.4 s) from Main; it is now 3:12.6. That could not be done: rename_composition: the new name is blank.',
    });
  });

  it('answers a prompt it does not understand with what it can do, without tool calls', async () => {
    const next = await step([{ role: 'user', content: 'write me a poem about cats' }]);
    assert.equal(next.kind, 'final');
    const text = (next as { text: string }).text;
    assert.match(
      text,
      /^I did not understand "write me a poem about cats", so nothing was changed\. I can edit the composition when asked like this: /,
    );
    for (const phrase of ['“remove filler words”', '“keep only 00:30 to 01:10”', '“undo that”', '“do the same for Outro”'])
      assert.ok(text.includes(phrase), phrase);
    // Half-understood is not understood: nothing runs.
    assert.equal((await step([{ role: 'user', content: 'remove filler words and sing' }])).kind, 'final');
  });

  it('offers only the tools the turn gives it', async () => {
    const next = await step(
      [{ role: 'user', content: 'undo that' }],
      schemas.filter((s) => s.name !== 'undo'),
    );
    assert.equal(next.kind, 'final');
    assert.doesNotMatch((next as { text: string }).text, /“undo that”/);
  });

  it('gives each call an id unique in the conversation, the same for the same messages', async () => {
    const messages: TurnMessage[] = [{ role: 'user', content: 'remove filler words and remove retakes' }];
    const [a, b] = [await step(messages), await step(messages)];
    assert.deepEqual(a, b);
    const ids = (a as Extract<ModelStep, { kind: 'tool_calls' }>).calls.map((c) => c.id);
    assert.equal(new Set(ids).size, 2);
  });

  it('stops at once when the signal is aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('cancelled'));
    await assert.rejects(
      model.next({ messages: [{ role: 'user', content: 'undo' }], tools: schemas, signal: controller.signal }),
      /cancelled/,
    );
  });

  it('parses times: units, words, clocks, sums', () => {
    const cases: [string, number | null][] = [
      ['5', 5],
      ['1.5 seconds', 1.5],
      ['2.5s', 2.5],
      ['500 ms', 0.5],
      ['2 minutes', 120],
      ['1 minute 30 seconds', 90],
      ['1 min and 5 s', 65],
      ['five seconds', 5],
      ['half a second', 0.5],
      ['a minute', 60],
      ['00:30', 30],
      ['01:10', 70],
      ['1:10.5', 70.5],
      ['1:02:03', 3723],
      ['0:75', null],
      ['soon', null],
      ['5 parsecs', null],
      ['', null],
    ];
    for (const [text, seconds] of cases) assert.equal(parseTime(text), seconds, text);
  });
});
