import { compositionDuration, keepMarkers, keepRange, type Word } from '../../edl';
import { clock, compositionArgument, plural, targetOf, ToolInputError, wordsOf, type AgentTool } from './tool';
import { mentionsOf } from './transcript';

/** Compositions as wholes: rename, create, duplicate, delete, and a new one made of a passage. */

const name = { type: 'string', minLength: 1, maxLength: 200 } as const;

export const renameComposition: AgentTool = {
  schema: {
    name: 'rename_composition',
    description: 'Renames a composition.',
    parameters: { type: 'object', properties: { name, composition: compositionArgument }, required: ['name'], additionalProperties: false },
  },
  run(model, args, ctx) {
    const target = targetOf(model, args.composition, ctx);
    const to = (args.name as string).trim();
    if (to === '') throw new ToolInputError('the new name is blank');
    if (to === target.name) return { changes: [], summary: `${target.name} already has that name; nothing changed` };
    return {
      changes: [{ composition_id: target.composition_id, edit: { kind: 'rename', name: to } }],
      summary: `Renamed ${target.name} to ${to}`,
    };
  },
};

export const createComposition: AgentTool = {
  schema: {
    name: 'create_composition',
    description: 'Creates a composition: empty, or of whole media files of the project, end to end, in the order given.',
    parameters: {
      type: 'object',
      properties: { name, media: { type: 'array', items: { type: 'string', minLength: 1 }, maxItems: 1000 } },
      required: ['name'],
      additionalProperties: false,
    },
  },
  run(model, args, ctx) {
    const refs = (args.media as string[] | undefined) ?? [];
    const clips = refs.map((ref) => {
      const media = model.media.find((m) => m.ref === ref);
      if (!media)
        throw new ToolInputError(
          `"${ref}" is not a media file of the project; it has ${model.media.map((m) => `"${m.ref}"`).join(', ') || 'none'}`,
        );
      return { media: ref, in: 0, out: media.duration };
    });
    const newName = (args.name as string).trim();
    if (newName === '') throw new ToolInputError('the name is blank');
    const created = { composition_id: ctx.newId(), name: newName, clips, markers: [] };
    const what = clips.length === 0 ? 'empty' : `of ${plural(clips.length, 'media file')}, ${clock(compositionDuration(clips))}`;
    return { changes: [{ create: created }], summary: `Created ${created.name} (${what})` };
  },
};

export const duplicateComposition: AgentTool = {
  schema: {
    name: 'duplicate_composition',
    description: 'Makes a copy of a composition (clips and markers) under a new name, by default "<name> copy".',
    parameters: { type: 'object', properties: { name, composition: compositionArgument }, additionalProperties: false },
  },
  run(model, args, ctx) {
    const source = targetOf(model, args.composition, ctx);
    const copyName = (args.name as string | undefined)?.trim() || `${source.name} copy`;
    const created = { composition_id: ctx.newId(), name: copyName, clips: source.clips, markers: source.markers };
    return {
      changes: [{ create: created }],
      summary: `Duplicated ${source.name} as ${copyName} (${clock(compositionDuration(source.clips))})`,
    };
  },
};

export const deleteComposition: AgentTool = {
  schema: {
    name: 'delete_composition',
    description: 'Deletes a composition. The composition to delete must be named.',
    parameters: {
      type: 'object',
      properties: { composition: compositionArgument },
      required: ['composition'],
      additionalProperties: false,
    },
  },
  run(model, args, ctx) {
    const target = targetOf(model, args.composition, ctx);
    return { changes: [{ composition_id: target.composition_id, edit: { kind: 'delete' } }], summary: `Deleted ${target.name}` };
  },
};

/**
 * The passage about a phrase: the transcript is split into sentences (at . ? ! or a pause of
 * `SENTENCE_PAUSE` s); mentions whose sentences lie at most `GAP_SECONDS` apart form one passage;
 * the passage with the most mentions (the first on a tie) runs from the start of its first
 * sentence to the end of its last.
 */
const SENTENCE_PAUSE = 0.7;
const GAP_SECONDS = 30;

function sentenceOfEachWord(words: readonly Word[]): number[] {
  let sentence = 0;
  return words.map((w, i) => {
    const previous = words[i - 1];
    if (previous && (/[.?!]["')\]]*$/.test(previous.text.trim()) || w.start - previous.end >= SENTENCE_PAUSE)) sentence++;
    return sentence;
  });
}

export function passageAbout(words: readonly Word[], phrase: string): { from: number; to: number; mentions: number } | null {
  const mentions = mentionsOf(words, phrase);
  if (mentions.length === 0) return null;
  const sentenceOf = sentenceOfEachWord(words);
  const firstWord = (s: number) => sentenceOf.indexOf(s);
  const lastWord = (s: number) => sentenceOf.lastIndexOf(s);
  type Passage = { first: number; last: number; mentions: number };
  const passages: Passage[] = [];
  for (const m of mentions) {
    const [first, last] = [sentenceOf[m.first], sentenceOf[m.last]];
    const open = passages[passages.length - 1];
    if (open && words[firstWord(first)].start - words[lastWord(open.last)].end <= GAP_SECONDS) {
      passages[passages.length - 1] = { first: open.first, last: Math.max(open.last, last), mentions: open.mentions + 1 };
    } else passages.push({ first, last, mentions: 1 });
  }
  const best = passages.reduce((a, b) => (b.mentions > a.mentions ? b : a));
  return { from: words[firstWord(best.first)].start, to: words[lastWord(best.last)].end, mentions: best.mentions };
}

export const makeClip: AgentTool = {
  schema: {
    name: 'make_clip',
    description:
      'Makes a new composition of the passage about a phrase ("the part about pricing"): the sentences around its mentions, ' +
      'from the composition, leaving the composition as it is.',
    parameters: {
      type: 'object',
      properties: { phrase: { type: 'string', minLength: 1, maxLength: 200 }, name, composition: compositionArgument },
      required: ['phrase'],
      additionalProperties: false,
    },
  },
  run(model, args, ctx) {
    const source = targetOf(model, args.composition, ctx);
    const phrase = args.phrase as string;
    const passage = passageAbout(wordsOf(model, source), phrase);
    if (!passage) throw new ToolInputError(`"${phrase}" is not said in ${source.name}`);
    const clipName = (args.name as string | undefined)?.trim() || `About ${phrase}`;
    const clips = keepRange(source.clips, passage.from, passage.to);
    const created = { composition_id: ctx.newId(), name: clipName, clips, markers: keepMarkers(source.markers, passage.from, passage.to) };
    return {
      changes: [{ create: created }],
      summary:
        `Made ${clipName} from ${clock(passage.from)} to ${clock(passage.to)} of ${source.name} ` +
        `(${plural(passage.mentions, 'mention')} of "${phrase}"); it lasts ${clock(compositionDuration(clips))}`,
    };
  },
};
