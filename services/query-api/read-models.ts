import { chargesModel } from '../../lib/app/balance';
import type { ReadModel } from '../../lib/app/read-models';
import { jobsModel } from './jobs-projection';
import { compositionsModel } from './models/compositions';
import { deliveriesModel } from './models/deliveries';
import { foldersModel } from './models/folders';
import { projectsModel } from './models/projects';

/** Every read model the projector keeps and replay rebuilds. Adding one: its file, and a line here. */
export const READ_MODELS: readonly ReadModel[] = [jobsModel, chargesModel, projectsModel, compositionsModel, foldersModel, deliveriesModel];
