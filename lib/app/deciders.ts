import { decideJob, evolveJob, initialJobState } from '../domain/job';
import { decideProject, evolveProject, initialProjectState } from '../domain/project';

export const jobDecider = { initialState: initialJobState, evolve: evolveJob, decide: decideJob };
export const projectDecider = { initialState: initialProjectState, evolve: evolveProject, decide: decideProject };
