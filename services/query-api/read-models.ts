import { chargesModel } from '../../lib/app/balance';
import type { ReadModel } from '../../lib/app/read-models';
import { jobsModel } from '../../lib/read-models/jobs';
import { compositionsModel } from '../../lib/read-models/compositions';
import { deliveriesModel } from '../../lib/read-models/deliveries';
import { foldersModel } from '../../lib/read-models/folders';
import { projectsModel } from '../../lib/read-models/projects';
import { publicationsModel } from '../../lib/read-models/publications';

/** Every read model the projector keeps and replay rebuilds. Adding one: its file, and a line here. */
export const READ_MODELS: readonly ReadModel[] = [
  jobsModel,
  chargesModel,
  projectsModel,
  compositionsModel,
  foldersModel,
  deliveriesModel,
  publicationsModel,
];
