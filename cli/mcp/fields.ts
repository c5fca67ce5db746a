import { z } from 'zod';
import { DEFAULT_WAIT_SECONDS, MAX_WAIT_SECONDS } from './job-wait';

/**
 * Input fields several tools share. Ids are checked as the API checks them (any 8-4-4-4-12 hex
 * UUID, zod's `guid`; its `uuid` would refuse versions and variants the API accepts); anything
 * finer is left to the API, whose 400 names the field too.
 */

export const projectId = z.guid().describe('The project id (a UUID, from list_projects, search_drive or an earlier answer)');

export const jobId = z.string().min(1).max(200).describe('The job id, as returned by import_media, prompt_agent or publish_composition');

export const folderPath = z
  .string()
  .min(1)
  .max(1024)
  .regex(/^[^/]+(\/[^/]+)*$/, 'folder names separated by single slashes, no leading or trailing slash')
  .describe('A Drive folder, nested folders separated by / (e.g. "Clients/Acme")');

export const wait = z
  .boolean()
  .optional()
  .describe('Wait for the job to finish and return its result (default false: return at once with the job id)');

export const waitSeconds = z
  .number()
  .int()
  .min(1)
  .max(MAX_WAIT_SECONDS)
  .optional()
  .describe(
    `How long to wait at most, in seconds (default ${DEFAULT_WAIT_SECONDS}, at most ${MAX_WAIT_SECONDS}); the job keeps running after that`,
  );
