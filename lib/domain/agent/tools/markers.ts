import { compositionDuration, ms, type Marker } from '../../edl';
import { clock, compositionArgument, plural, targetOf, ToolInputError, wordsOf, type AgentTool } from './tool';
import { mentionsOf } from './transcript';

/** How many marker times a summary lists: a phrase said 180 times does not make a 180-item sentence. */
const LISTED_TIMES = 5;

/** Markers at a time, or at each mention of a phrase (at the start of its first word). */
export const addMarkers: AgentTool = {
  schema: {
    name: 'add_markers',
    description: 'Adds a marker at a time (composition seconds), or one at each mention of a phrase. Give `at` or `phrase`.',
    parameters: {
      type: 'object',
      properties: {
        at: { type: 'number', minimum: 0 },
        phrase: { type: 'string', minLength: 1, maxLength: 200 },
        label: { type: 'string', minLength: 1, maxLength: 200, description: 'Default: the phrase, or "Marker".' },
        composition: compositionArgument,
      },
      additionalProperties: false,
    },
  },
  run(model, args, ctx) {
    const target = targetOf(model, args.composition, ctx);
    const [at, phrase] = [args.at as number | undefined, args.phrase as string | undefined];
    if ((at === undefined) === (phrase === undefined)) throw new ToolInputError('give exactly one of "at" (seconds) or "phrase"');
    const label = (args.label as string | undefined) ?? phrase ?? 'Marker';
    let markers: Marker[];
    if (at !== undefined) {
      const duration = compositionDuration(target.clips);
      if (at > duration) throw new ToolInputError(`"at" (${at} s) is past the end of ${target.name} (${clock(duration)})`);
      markers = [{ time: ms(at), label }];
    } else {
      const words = wordsOf(model, target);
      markers = mentionsOf(words, phrase!).map((m) => ({ time: words[m.first].start, label }));
      if (markers.length === 0) return { changes: [], summary: `"${phrase}" is not said in ${target.name}; no marker added` };
    }
    const listed = markers.slice(0, LISTED_TIMES).map((m) => clock(m.time));
    const where = `at ${listed.join(', ')}${markers.length > LISTED_TIMES ? ` and ${markers.length - LISTED_TIMES} more` : ''}`;
    return {
      changes: [{ composition_id: target.composition_id, edit: { kind: 'add_markers', markers } }],
      summary: `Added ${plural(markers.length, 'marker')} "${label}" to ${target.name} ${where}`,
    };
  },
};
