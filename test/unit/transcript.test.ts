import assert from 'node:assert/strict';
import { ms, type Word } from '../../lib/domain/edl';
import { CUE_RULES, cues, eachCue, linesOf } from '../../lib/domain/transcript/cues';
import { clockTime, DEFAULT_TRANSCRIPT_OPTIONS, subripTime, transcriptBlocks } from '../../lib/domain/transcript/document';
import { renderHtml, renderMarkdown, renderRtf, renderSrt, renderTxt, renderVtt } from '../../lib/domain/transcript/formats';
import { referenceCues } from '../fixtures/reference-cues';

/** Issue 22: the transcript module (lib/domain/transcript): cues, blocks and the text formats, pure. */

const word = (text: string, start: number, end = start + 0.3, speaker: string | null = null): Word => ({
  text,
  start,
  end,
  confidence: 1,
  speaker,
});

/** Composition words (times in ms) of speech at about 150 words a minute, sentences of 5 to 16 words, a pause now and then, two speakers. */
function speech(count: number): Word[] {
  const vocabulary = [
    'we',
    'shipped',
    'the',
    'new',
    'release',
    'yesterday',
    'and',
    'everyone',
    'was',
    'extraordinarily',
    'happy',
    'about',
    'it',
  ];
  const words: Word[] = [];
  let t = 0;
  for (let i = 0; i < count; i++) {
    const sentenceEnd = i % 11 === 10 || i % 7 === 6;
    const text = vocabulary[(i * 7) % vocabulary.length] + (sentenceEnd ? '.' : i % 5 === 4 ? ',' : '');
    const speaker = Math.floor(i / 40) % 2 === 0 ? 'ana.wav' : 'ben.wav';
    words.push(word(text, ms(t), ms(t + 0.3), speaker));
    t += i % 53 === 52 ? 2.5 : 0.4;
  }
  return words;
}

describe('transcript: caption cues', () => {
  it('keeps every cue to two lines of 42 characters and 1 to 7 seconds, and every word once, in order', () => {
    const words = speech(2000);
    for (const labels of ['off', 'changes', 'every_paragraph'] as const) {
      const all = cues(words, { labels });
      all.forEach((c, i) => {
        assert.ok(c.lines.length <= CUE_RULES.lines, JSON.stringify(c));
        for (const line of c.lines) assert.ok(line.length <= CUE_RULES.lineChars, JSON.stringify(c));
        assert.ok(c.end - c.start <= CUE_RULES.maxSeconds + 1e-9, JSON.stringify(c));
        const next = all[i + 1];
        assert.ok(c.end - c.start >= CUE_RULES.minSeconds - 1e-9 || next?.start === c.end, JSON.stringify(c));
        if (next) assert.ok(next.start >= c.end);
      });
      const text = all.map((c) => c.lines.join(' ').replace(/\b(ana|ben)\.wav: /g, '')).join(' ');
      assert.equal(text, words.map((w) => w.text).join(' '), labels);
    }
  });

  it('ends a cue after punctuation when the text allows it, and never spans two speakers', () => {
    const words = speech(2000);
    const all = cues(words);
    const endsAtPunctuation = all.filter((c) => /[.,]$/.test(c.lines[c.lines.length - 1])).length;
    assert.ok(endsAtPunctuation / all.length > 0.8, `${endsAtPunctuation} of ${all.length}`);
    const speakerOf = new Map(words.map((w) => [w.start, w.speaker]));
    for (const c of all) assert.equal(speakerOf.get(c.start), c.speaker);
  });

  it('labels the first cue of each speaker with "changes", each cue with "every_paragraph"', () => {
    const words = [word('Hi.', 0, 0.5, 'A'), word('Hello.', 3, 3.5, 'B'), word('Bye.', 6, 6.5, 'B')];
    assert.deepEqual(
      cues(words, { labels: 'changes' }).map((c) => c.lines[0]),
      ['A: Hi.', 'B: Hello.', 'Bye.'],
    );
    assert.deepEqual(
      cues(words, { labels: 'every_paragraph' }).map((c) => c.lines[0]),
      ['A: Hi.', 'B: Hello.', 'B: Bye.'],
    );
  });

  it('stretches a short cue to 1 s only up to the next cue, and cuts a long word at 7 s', () => {
    const [a, b] = cues([word('a', 0, 0.2), word('b', 1.9, 2), word('c', 3.6, 3.7)]);
    assert.deepEqual([a.start, a.end, b.start, b.end], [0, 1, 1.9, 2.9]);
    const [long] = cues([word('mmmmm', 0, 9)]);
    assert.equal(long.end, 7);
    const [tight] = cues([word('a', 0, 0.2, 'A'), word('b', 0.5, 0.7, 'B')]);
    assert.equal(tight.end, 0.5, 'the next speaker starts at 0.5');
  });

  it('joins a short last word to the cue before it rather than leaving it under 1 s', () => {
    const words = [word('We', 0), word('shipped', 0.5), word('it.', 2.2, 2.5), word('Right', 2.6, 2.9), word('Yes.', 3, 3.4, 'B')];
    assert.deepEqual(
      cues(words).map((c) => [c.start, c.end, c.lines.join(' ')]),
      [
        [0, 2.9, 'We shipped it. Right'],
        [3, 4, 'Yes.'],
      ],
    );
  });

  it('makes the cues of the plain version (test/fixtures/reference-cues.ts) on 300 random transcripts', () => {
    // Words of 1 to 60 characters (some longer than a line), punctuation, blank words, pauses,
    // words longer than a cue, three speakers with long names and none: each label mode. No
    // control characters: the oracle leaves them in its lines, the cues make them spaces (below).
    let seed = 22;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];
    const speakers = [null, 'Ana', 'Benedict Cumberbatch-Oyelaran.wav'];
    let compared = 0;
    for (let n = 0; n < 300; n++) {
      const words: Word[] = [];
      let t = 0;
      let speaker = pick(speakers);
      for (let i = Math.floor(random() * 400); i > 0; i--) {
        if (random() < 0.05) speaker = pick(speakers);
        const length = random() < 0.03 ? 43 + Math.floor(random() * 18) : 1 + Math.floor(random() * 12);
        const text =
          random() < 0.02 ? ' ' : 'x'.repeat(length) + (random() < 0.3 ? pick([...'.,!?;:…)]"”»—–-', '.”', '!)', '?»', '…"', 'é']) : '');
        const duration = random() < 0.01 ? 8 : 0.1 + random() * 0.5;
        words.push(word(text, ms(t), ms(t + duration), speaker));
        t += duration + (random() < 0.05 ? 1 + random() * 3 : random() * 0.2);
      }
      const labels = pick(['off', 'changes', 'every_paragraph'] as const);
      const made = cues(words, { labels });
      assert.deepEqual(made, referenceCues(words, { labels }), `transcript ${n} (${words.length} words, labels ${labels})`);
      compared += made.length;
    }
    assert.ok(compared > 10_000, `only ${compared} cues compared`);
  });

  it('splits two lines where both fit, preferring after punctuation', () => {
    assert.deepEqual(linesOf(['short', 'one']), ['short one']);
    const texts = 'We shipped it yesterday, and everyone was happy about the release'.split(' ');
    assert.deepEqual(linesOf(texts), ['We shipped it yesterday,', 'and everyone was happy about the release']);
    assert.equal(linesOf(Array.from({ length: 30 }, () => 'word')), null);
  });
});

describe('transcript: blocks and formats', () => {
  const words = [word('a<b>', 0, 0.4, 'Ana & Co'), word('c', 1, 1.4, 'Ana & Co'), word('d', 5, 5.4, 'Ben')];
  const source = (title = 'T') => ({
    title,
    blocks: transcriptBlocks(words, [{ time: 2, label: 'M*' }], { ...DEFAULT_TRANSCRIPT_OPTIONS, markers: true }),
  });

  it('formats timecodes', () => {
    assert.equal(clockTime(3723.9), '01:02:03');
    assert.equal(subripTime(3723.4567), '01:02:03,457');
    assert.equal(subripTime(0), '00:00:00,000');
    assert.equal(subripTime(0.005), '00:00:00,005');
    assert.equal(subripTime(61.05), '00:01:01,050');
    assert.equal(subripTime(360_000.5), '100:00:00,500', 'hours past 99 keep every digit');
    assert.equal(clockTime(360_059), '100:00:59');
  });

  it('escapes every user text in html, markdown and rtf', () => {
    const html = [...renderHtml(source('<script>"x"</script>'))].join('');
    assert.doesNotMatch(html, /<script>|<b>/);
    assert.match(html, /<title>&lt;script&gt;&quot;x&quot;&lt;\/script&gt;<\/title>/);
    assert.match(html, /<strong class="speaker">Ana &amp; Co:<\/strong> a&lt;b&gt; c/);
    const md = [...renderMarkdown(source('# 1. *x*'))].join('');
    assert.match(md, /^# \\# 1\\?\. \\\*x\\\*\n/);
    assert.match(md, /## M\\\*/);
    const rtf = [...renderRtf(source('{😀}\\'))].join('');
    assert.ok(rtf.includes("\\{\\u-10179\\'3f\\u-8704\\'3f\\}\\\\"), rtf);
  });

  it('renders lazily: the first piece comes before the words are all read', () => {
    let read = 0;
    function* counted(): Generator<Word> {
      for (const w of speech(9000)) {
        read++;
        yield w;
      }
    }
    const txt = renderTxt({ title: 'T', blocks: transcriptBlocks(counted(), [], DEFAULT_TRANSCRIPT_OPTIONS) });
    txt.next();
    txt.next();
    assert.ok(read < 200, `${read} words read for the first paragraph`);
    read = 0;
    const srt = renderSrt(eachCue(counted()));
    srt.next();
    assert.ok(read < 50, `${read} words read for the first cue`);
  });

  it('renders an empty transcript as a document with its title only', () => {
    const empty = { title: 'T', blocks: transcriptBlocks([], [], DEFAULT_TRANSCRIPT_OPTIONS) };
    assert.equal([...renderTxt(empty)].join(''), 'T\n');
    assert.equal([...renderSrt(eachCue([], { labels: 'changes' }))].join(''), '');
  });

  it('keeps every SRT and WebVTT cue line one line: line breaks and controls in words and names are spaces', () => {
    const words = [
      word('one\ntwo', 0, 0.4, 'Ana\u0007'),
      word('tab\there', 0.5, 0.9, 'Ana\u0007'),
      word('x\u2028\u2029y', 1, 1.4, 'Ana\u0007'),
    ];
    const srt = [...renderSrt(eachCue(words, { labels: 'changes' }))].join('');
    assert.equal(srt, `1\n00:00:00,000 --> 00:00:01,400\nAna : one two tab here x y\n\n`);
    const vtt = [...renderVtt(eachCue(words, { labels: 'every_paragraph' }))].join('');
    assert.equal(vtt, `WEBVTT\n\n00:00:00.000 --> 00:00:01.400\nAna : one two tab here x y\n\n`);
    const long = Array.from({ length: 12 }, (_, i) => word(`w${i}\r\nword`, i * 0.3, i * 0.3 + 0.2));
    for (const block of [...renderSrt(eachCue(long))].join('').split('\n\n').filter(Boolean))
      assert.match(block, /^\d+\n\S+ --> \S+\n[^\n\r]+(\n[^\n\r]+)?$/, JSON.stringify(block));
  });

  it('renders WebVTT: the header, the SRT cues with dotted times, markup characters escaped', () => {
    const words = [word('Tom', 0), word('&', 0.4), word('<Jerry>', 0.8), word('a-->b', 1.2)].map((w) => ({ ...w, speaker: 'A' }));
    const vtt = [...renderVtt(eachCue(words))].join('');
    const cue = cues(words)[0]!;
    assert.ok(vtt.startsWith('WEBVTT\n\n'));
    assert.equal(
      vtt,
      `WEBVTT\n\n${subripTime(cue.start).replace(',', '.')} --> ${subripTime(cue.end).replace(',', '.')}\nTom &amp; &lt;Jerry&gt; a--&gt;b\n\n`,
    );
    assert.equal([...renderVtt(eachCue([]))].join(''), 'WEBVTT\n\n');
    const many = [...renderVtt(eachCue(speech(300)))].join('').split('\n\n').filter(Boolean);
    assert.equal(many.length - 1, cues(speech(300)).length);
    for (const block of many.slice(1)) assert.match(block, /^\d{2}:\d{2}:\d{2}\.\d{3} --> \d{2}:\d{2}:\d{2}\.\d{3}\n[^\n]+(\n[^\n]+)?$/);
  });
});
