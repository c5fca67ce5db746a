/**
 * The builtin planner's table of phrasings (docs/agent-builtin.md lists it for users): each a
 * pattern over one clause of the prompt and the tool calls it means, with times and numbers
 * parsed. Patterns are tried in order, case-insensitively, against the whole clause.
 */

export type PlannedCall = { readonly name: string; readonly arguments: Readonly<Record<string, unknown>> };
type Phrasing = {
  readonly examples: readonly string[];
  readonly pattern: RegExp;
  /** The calls, or null when a captured time or number does not parse (the phrasing does not apply). */
  readonly plan: (m: RegExpMatchArray) => PlannedCall[] | null;
};

// ---------------------------------------------------------------- times and numbers

const NUMBER_WORDS = new Map<string, number>([
  ...'zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty'
    .split(' ')
    .map((w, i): [string, number] => [w, i]),
  ['thirty', 30],
  ['forty', 40],
  ['fifty', 50],
  ['sixty', 60],
  ['half a', 0.5],
  ['a', 1],
  ['an', 1],
]);

const UNIT_SECONDS: readonly [RegExp, number][] = [
  [/^(ms|msecs?|milliseconds?)$/, 0.001],
  [/^(s|secs?|seconds?)$/, 1],
  [/^(m|mins?|minutes?)$/, 60],
  [/^(h|hrs?|hours?)$/, 3600],
];

const numberOf = (text: string): number | null => {
  if (/^-?\d+(\.\d+)?$|^-?\.\d+$/.test(text)) return Number(text);
  return NUMBER_WORDS.get(text) ?? null;
};

/**
 * Seconds from "5 seconds", "1.5 s", "500 ms", "2 minutes", "1 minute 30 seconds", "five
 * seconds", "half a second", a clock "00:30", "1:10.5", "1:02:03", or a bare number (seconds).
 */
export function parseTime(input: string): number | null {
  const text = input
    .trim()
    .toLowerCase()
    .replace(/^(?:at|the)\s+/, '');
  const clock = /^(\d+):(\d{1,2})(?::(\d{1,2}))?(\.\d+)?$/.exec(text);
  if (clock) {
    const [h, m, s] =
      clock[3] === undefined ? [0, Number(clock[1]), Number(clock[2])] : [Number(clock[1]), Number(clock[2]), Number(clock[3])];
    if (m >= 60 && clock[3] !== undefined) return null;
    if (s >= 60) return null;
    return h * 3600 + m * 60 + s + Number(clock[4] ?? 0);
  }
  const bare = numberOf(text);
  if (bare !== null && text !== 'a' && text !== 'an') return bare;
  // Amounts with units, summed: "1 minute 30 seconds", "1 min and 5 s", "2.5s".
  const parts = text.split(/\s*(?:,|\band\b)\s*|\s+(?=\d)/).filter(Boolean);
  let total = 0;
  for (const part of parts) {
    const m = /^(-?\d+(?:\.\d+)?|[a-z]+(?: a)?)\s*([a-z]+)$/.exec(part);
    const amount = m && numberOf(m[1]);
    const unit = m && UNIT_SECONDS.find(([re]) => re.test(m[2]));
    if (amount === null || amount === undefined || !unit) return null;
    total += amount * unit[1];
  }
  return parts.length > 0 ? Math.round(total * 1000) / 1000 : null;
}

// ---------------------------------------------------------------- the table

const one = (name: string, args: Record<string, unknown> = {}): PlannedCall[] => [{ name, arguments: args }];
/** A name as said: quotes dropped. */
const named = (text: string): string => text.trim().replace(/^["'“‘](.*)["'”’]$/, '$1');
const withTime = (text: string, use: (seconds: number) => PlannedCall[]): PlannedCall[] | null => {
  const seconds = parseTime(text);
  return seconds === null ? null : use(seconds);
};
const REMOVE = '(?:remove|cut|delete|drop|take out|get rid of|strip)';
const PASSAGE = '(?:part|bit|section|passage|segment|portion)';

export const PHRASINGS: readonly Phrasing[] = [
  {
    examples: ['remove filler words', 'remove the ums and uhs', 'cut fillers'],
    pattern: new RegExp(
      `^${REMOVE}\\s+(?:all\\s+)?(?:the\\s+)?(?:filler\\s+words|fillers|filler|ums?(?:\\s+and\\s+uhs?)?|uhs?(?:\\s+and\\s+ums?)?)$`,
      'i',
    ),
    plan: () => one('remove_words', { fillers: true }),
  },
  {
    examples: ['remove repeated words', 'remove stutters'],
    pattern: new RegExp(
      `^${REMOVE}\\s+(?:all\\s+)?(?:the\\s+)?(?:(?:repeated|repeating|doubled|duplicated?)\\s+words|repetitions|stutters)$`,
      'i',
    ),
    plan: () => one('remove_words', { repeated: true }),
  },
  {
    examples: ['remove retakes', 'cut the false starts'],
    pattern: new RegExp(`^${REMOVE}\\s+(?:all\\s+)?(?:the\\s+)?(?:retakes|re-takes|false starts|bad takes|earlier takes)$`, 'i'),
    plan: () => one('remove_retakes'),
  },
  {
    examples: ['cut silences longer than 1.5 seconds', 'remove silences', 'remove dead air longer than 2 s'],
    pattern: new RegExp(
      `^${REMOVE}\\s+(?:all\\s+)?(?:the\\s+)?(?:silences?|silent parts|dead air)(?:\\s+(?:longer|more)\\s+than\\s+(.+))?$`,
      'i',
    ),
    plan: (m) =>
      m[1] === undefined ? one('remove_silences', { longer_than: 1 }) : withTime(m[1], (s) => one('remove_silences', { longer_than: s })),
  },
  {
    examples: ['shorten pauses to 0.5 seconds', 'tighten the pauses'],
    pattern: /^(?:shorten|tighten|reduce|trim)\s+(?:all\s+)?(?:the\s+)?(?:pauses|gaps|silences)(?:\s+(?:to|down to)\s+(.+))?$/i,
    plan: (m) => (m[1] === undefined ? one('shorten_pauses', { to: 0.5 }) : withTime(m[1], (s) => one('shorten_pauses', { to: s }))),
  },
  {
    examples: ['trim the first 5 seconds', 'cut off the first 10 s'],
    pattern: new RegExp(`^(?:trim|${REMOVE}|chop)(?:\\s+off)?\\s+the\\s+first\\s+(.+?)(?:\\s+off)?$`, 'i'),
    plan: (m) => withTime(m[1], (s) => one('trim', { start: s })),
  },
  {
    examples: ['trim the last 3 seconds'],
    pattern: new RegExp(`^(?:trim|${REMOVE}|chop)(?:\\s+off)?\\s+the\\s+(?:last|final)\\s+(.+?)(?:\\s+off)?$`, 'i'),
    plan: (m) => withTime(m[1], (s) => one('trim', { end: s })),
  },
  {
    examples: ['keep only 00:30 to 01:10', 'keep just from 1:00 to 2:30'],
    pattern: /^keep\s+(?:only|just)\s+(?:from\s+)?(.+?)\s+(?:to|until|till|through|-|–)\s+(.+)$/i,
    plan: (m) => withTime(m[1], (from) => withTime(m[2], (to) => one('keep_range', { from, to })) ?? []),
  },
  {
    examples: ['cut 1:00 to 1:30', 'remove from 10 s to 20 s'],
    pattern: new RegExp(`^${REMOVE}\\s+(?:from\\s+)?(.+?)\\s+(?:to|until|till|through|-|–)\\s+(.+)$`, 'i'),
    plan: (m) => withTime(m[1], (from) => withTime(m[2], (to) => one('cut_ranges', { ranges: [{ from, to }] })) ?? []),
  },
  {
    examples: ['remove the word "basically"', 'cut every "like"'],
    pattern: new RegExp(`^${REMOVE}\\s+(?:every|each|all)?\\s*(?:the\\s+)?(?:words?|phrases?)?\\s*(".+")$`, 'i'),
    plan: (m) => one('remove_words', { words: [...m[1].matchAll(/"([^"]+)"/g)].map((q) => q[1]) }),
  },
  {
    examples: ['rename this composition to Intro', 'call it Intro'],
    pattern: /^(?:rename\s+(?:this|it|the)(?:\s+composition)?\s+(?:to|as)|call\s+(?:it|this(?:\s+composition)?))\s+(.+)$/i,
    plan: (m) => one('rename_composition', { name: named(m[1]) }),
  },
  {
    examples: ['rename Outro to End'],
    pattern: /^rename\s+(?:the\s+composition\s+)?(.+?)\s+(?:to|as)\s+(.+)$/i,
    plan: (m) => one('rename_composition', { composition: named(m[1]), name: named(m[2]) }),
  },
  {
    examples: ['add a marker at every mention of pricing', 'mark each mention of "the launch"'],
    pattern:
      /^(?:(?:add|put|place)\s+(?:a\s+)?markers?\s+(?:at|on|to)|mark)\s+(?:every|each|all)\s+(?:the\s+)?(?:mentions?|times?)\s+(?:of\s+)?(.+)$/i,
    plan: (m) => one('add_markers', { phrase: named(m[1]) }),
  },
  {
    examples: ['add a marker at 1:30 called Chapter 2'],
    pattern: /^(?:add|put|place)\s+(?:a\s+)?marker\s+(?:at|on)\s+(.+?)(?:\s+(?:called|named|labell?ed|saying)\s+(.+))?$/i,
    plan: (m) => withTime(m[1], (at) => one('add_markers', m[2] === undefined ? { at } : { at, label: named(m[2]) })),
  },
  {
    examples: ['make a clip of the part about pricing', 'make a clip about pricing called Teaser'],
    pattern: new RegExp(
      `^(?:make|create|cut|pull)\\s+(?:a\\s+)?(?:new\\s+)?(?:clip|short|composition)\\s+(?:(?:of|from|with)\\s+(?:the\\s+)?${PASSAGE}\\s+)?(?:about|on|covering)\\s+(.+?)(?:\\s+(?:called|named)\\s+(.+))?$`,
      'i',
    ),
    plan: (m) => one('make_clip', m[2] === undefined ? { phrase: named(m[1]) } : { phrase: named(m[1]), name: named(m[2]) }),
  },
  {
    examples: ['duplicate this composition', 'make a copy called Backup'],
    pattern:
      /^(?:duplicate|copy)(?:\s+(?:this|it|the))?(?:\s+composition)?(?:\s+(?:as|called|named)\s+(.+))?$|^make\s+a\s+copy(?:\s+(?:called|named)\s+(.+))?$/i,
    plan: (m) =>
      (m[1] ?? m[2]) === undefined ? one('duplicate_composition') : one('duplicate_composition', { name: named((m[1] ?? m[2])!) }),
  },
  {
    examples: ['create a composition called Draft'],
    pattern: /^(?:create|make|add|start)\s+(?:a\s+)?(?:new\s+)?(?:empty\s+)?composition\s+(?:called|named)\s+(.+)$/i,
    plan: (m) => one('create_composition', { name: named(m[1]) }),
  },
  {
    examples: ['delete the composition Draft'],
    pattern: /^(?:delete|remove)\s+(?:the\s+)?composition\s+(.+)$/i,
    plan: (m) => one('delete_composition', { composition: named(m[1]) }),
  },
  {
    examples: ['enhance the audio'],
    pattern: /^(?:enhance|improve|clean up|fix)\s+(?:the\s+)?(?:audio|sound)$/i,
    plan: () => one('set_audio', { loudness_lufs: -16, noise_reduction: true }),
  },
  {
    examples: ['normalize the loudness to -16 LUFS', 'normalize the audio'],
    pattern:
      /^(?:normali[sz]e|set|level)\s+(?:the\s+)?(?:loudness|volume|audio|levels?)(?:\s+(?:to|at)\s+(-?\d+(?:\.\d+)?)\s*(?:lufs|lu)?)?$/i,
    plan: (m) => one('set_audio', { loudness_lufs: m[1] === undefined ? -16 : Number(m[1]) }),
  },
  {
    examples: ['reduce the background noise', 'turn on noise reduction'],
    pattern: /^(?:(?:reduce|remove|cut|clean up)\s+(?:the\s+)?(?:background\s+)?noise|(?:turn on|enable|add|use)\s+noise\s+reduction)$/i,
    plan: () => one('set_audio', { noise_reduction: true }),
  },
  {
    examples: ['turn off noise reduction'],
    pattern: /^(?:turn off|disable|remove|stop)\s+(?:the\s+)?noise\s+reduction$/i,
    plan: () => one('set_audio', { noise_reduction: false }),
  },
  {
    examples: ['undo that', 'revert the last change'],
    pattern:
      /^(?:undo|revert|reverse|take back)(?:\s+(?:that|it|this|the last (?:turn|change|edit|step)|the changes?|what you (?:just )?did))?$/i,
    plan: () => one('undo'),
  },
  {
    examples: ['show the transcript'],
    pattern: /^(?:show|read|get|print)\s+(?:me\s+)?(?:the\s+)?transcript$/i,
    plan: () => one('read_transcript'),
  },
];

/** "do the same for Outro": the composition the earlier turn's calls are repeated on. */
export const SAME_FOR =
  /^(?:now\s+)?(?:do\s+(?:the\s+same|that|it|this)(?:\s+again)?|(?:the\s+)?same(?:\s+thing)?)\s+(?:for|to|on|with|in)\s+(.+)$/i;
export const SAME_FOR_EXAMPLE = 'do the same for Outro';

/** Where a composition may be named at the end of a clause: "… from Outro", "… in the composition Outro". */
const TARGET_LINK = /\s+(?:in|from|for|on|of|to)\s+(?:the\s+)?(?:composition\s+)?/gi;

/** Politeness and punctuation around a clause. */
const tidy = (clause: string): string =>
  clause
    .trim()
    .replace(/[.!?]+$/, '')
    .replace(/^(?:please|can you|could you|would you|i want you to|i'd like you to|now|also|then)\s+/i, '')
    .replace(/\s+please$/i, '')
    .trim();

/**
 * The calls one clause means, or null. A clause the table does not know may end by naming a
 * composition ("remove filler words from Outro"): the rest is looked up, and the composition
 * applies to each call, provided each of their tools takes one.
 */
export function planClause(clause: string, takesComposition: (tool: string) => boolean): PlannedCall[] | null {
  const text = tidy(clause);
  const direct = matchTable(text);
  if (direct) return direct;
  // The last link first: "keep only 0:30 to 1:10 in Outro" splits at "in", not at "to".
  for (const link of [...text.matchAll(TARGET_LINK)].reverse()) {
    const calls = matchTable(text.slice(0, link.index));
    const composition = named(text.slice(link.index! + link[0].length));
    if (calls && composition !== '' && calls.every((c) => takesComposition(c.name))) {
      return calls.map((c) => ({ name: c.name, arguments: { ...c.arguments, composition } }));
    }
  }
  return null;
}

function matchTable(text: string): PlannedCall[] | null {
  for (const p of PHRASINGS) {
    const m = p.pattern.exec(text);
    const calls = m && p.plan(m);
    if (calls && calls.length > 0) return calls;
  }
  return null;
}
