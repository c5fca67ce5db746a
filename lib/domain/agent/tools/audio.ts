import { compositionArgument, targetOf, type AgentTool } from './tool';

/**
 * Audio enhancement, a composition setting that publish renders (ffmpeg `loudnorm` for the
 * loudness target, `afftdn` for noise reduction). The loudness bounds are loudnorm's own (-70 to -5 LUFS).
 */
export const setAudio: AgentTool = {
  schema: {
    name: 'set_audio',
    description:
      'Sets the audio enhancement of a composition: a loudness target in LUFS (-16 is usual for podcasts, null for none) ' +
      'and noise reduction. An omitted setting keeps its value.',
    parameters: {
      type: 'object',
      properties: {
        loudness_lufs: { type: ['number', 'null'], minimum: -70, maximum: -5 },
        noise_reduction: { type: 'boolean' },
        composition: compositionArgument,
      },
      additionalProperties: false,
    },
  },
  run(model, args, ctx) {
    const target = targetOf(model, args.composition, ctx);
    const loudness_lufs = args.loudness_lufs === undefined ? target.audio.loudness_lufs : (args.loudness_lufs as number | null);
    const noise_reduction = (args.noise_reduction as boolean | undefined) ?? target.audio.noise_reduction;
    const what = [
      loudness_lufs === null ? 'no loudness target' : `loudness ${loudness_lufs} LUFS`,
      noise_reduction ? 'noise reduction on' : 'noise reduction off',
    ].join(', ');
    if (loudness_lufs === target.audio.loudness_lufs && noise_reduction === target.audio.noise_reduction) {
      return { changes: [], summary: `${target.name} already has ${what}; nothing changed` };
    }
    return {
      changes: [{ composition_id: target.composition_id, edit: { kind: 'set_audio', loudness_lufs, noise_reduction } }],
      summary: `Set the audio of ${target.name}: ${what}`,
    };
  },
};
