import { setAudio } from './audio';
import { createComposition, deleteComposition, duplicateComposition, makeClip, renameComposition } from './compositions';
import { cutRanges, keepOnly, trim } from './cuts';
import { addMarkers } from './markers';
import { removeRetakes } from './retakes';
import { removeSilences, shortenPauses } from './silences';
import type { AgentTool } from './tool';
import { readTranscript } from './transcript';
import { undoLastTurn } from './undo';
import { removeWords } from './words';

export { ToolInputError, type AgentTool, type ToolContext, type TurnTouch } from './tool';

/** Every agent tool, in the order a model is shown them. */
export const AGENT_TOOLS: readonly AgentTool[] = [
  readTranscript,
  cutRanges,
  trim,
  keepOnly,
  removeWords,
  removeRetakes,
  removeSilences,
  shortenPauses,
  makeClip,
  renameComposition,
  createComposition,
  duplicateComposition,
  deleteComposition,
  addMarkers,
  setAudio,
  undoLastTurn,
];
