import { decideJob, evolveJob, initialJobState } from '../domain/job';
import { decideProject, evolveProject, initialProjectState } from '../domain/project';
import { decideDrive, decideToken, evolveDrive, evolveToken, initialDriveState, initialTokenState } from '../domain/tenancy';

/** Each aggregate's decider as one value, for handleCommand and loadState. */

export const jobDecider = { initialState: initialJobState, evolve: evolveJob, decide: decideJob };
export const projectDecider = { initialState: initialProjectState, evolve: evolveProject, decide: decideProject };
export const driveDecider = { initialState: initialDriveState, evolve: evolveDrive, decide: decideDrive };
export const tokenDecider = { initialState: initialTokenState, evolve: evolveToken, decide: decideToken };
