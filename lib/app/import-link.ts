import { isUuid, streams } from '../domain/ids';
import {
  importLinkDecider,
  importLinkStatus,
  type ImportLinkFile,
  type ImportLinkIssued,
  type ImportLinkStatus,
} from '../domain/import-link';
import { conflict, notFound } from '../domain/errors';
import { commandHandler } from './command-handler';
import {
  commitImport,
  importsOn,
  prepareImport,
  urlImportOnly,
  type ImportRequest,
  type ImportResponse,
  type UrlImportDeps,
} from './import';
import type { Principal } from './tenancy';

/**
 * Using a partner's import link (the web import page): the signed-in user's drive gets a new
 * project holding the link's files. The link is spent before anything is written, with the
 * project and job ids it reserves, so two concurrent uses import once: the second finds it used.
 * A crash between spending it and creating the project leaves a used link and no project; the
 * partner then issues a new link (links are cheap, and each request makes one).
 */

export type ImportLinkView = { readonly status: ImportLinkStatus; readonly link: ImportLinkIssued['data'] | null };

/** Reading and using import links on one store: built once per app (`importLinks(deps)`). */
export type ImportLinks = {
  /** The link of `nonce` and its state now; a nonce that is not a UUID names no link. */
  read(nonce: string, now: Date): Promise<ImportLinkView>;
  /**
   * Imports the link's files into `who`'s drive. Throws `not_found` for an unknown link and
   * `conflict` with `state` `used` or `expired` for a link that can no longer be used.
   */
  use(who: Principal, nonce: string, requestId: string): Promise<ImportResponse>;
};

export function importLinks(deps: UrlImportDeps): ImportLinks {
  const links = commandHandler(deps.store, importLinkDecider, streams.importLink);
  const imports = importsOn(urlImportOnly(deps));

  async function read(nonce: string, now: Date): Promise<ImportLinkView> {
    if (!isUuid(nonce)) return { status: 'unknown', link: null };
    const { state } = await links.load(nonce.toLowerCase());
    return { status: importLinkStatus(state, now.toISOString()), link: state.exists ? state.link : null };
  }

  async function use(who: Principal, nonce: string, requestId: string): Promise<ImportResponse> {
    const view = await read(nonce, deps.clock.now());
    if (!view.link) throw notFound('there is no such import link');
    // The decider has the last word (a concurrent use); this only spares a spent link the checks below.
    if (view.status === 'used' || view.status === 'expired') throw conflict(`this import link is ${view.status}`, view.status);
    const { link } = view;
    const partner = { partner_drive_id: link.partner_drive_id, source_id: link.source_id };
    // Checked first (balance, URLs): a refusal must not spend the link.
    const prepared = await prepareImport(imports, who, partnerImportRequest(link.files), { partner });
    await links.handle(
      link.nonce,
      {
        type: 'UseImportLink',
        by: { drive_id: who.driveId, user_id: who.userId },
        project_id: prepared.projectId,
        job_id: prepared.jobId,
        now: deps.clock.now().toISOString(),
      },
      {
        newId: () => deps.ids.uuidv7(),
        metadata: { partition_key: link.nonce, correlation_id: requestId, drive_id: who.driveId, user_id: who.userId },
      },
    );
    return commitImport(imports, who, prepared, requestId);
  }

  return { read, use };
}

// ---------------------------------------------------------------- the import request

const MAX_NAME = 255;
const SEQUENCE_NAME = 'Multitrack';

/**
 * The import a link's files make (pure). Each file is a URL item fetched with retries until the
 * storage serves it, named by its `name`, else the last segment of its URI's path, else its host;
 * repeated names get " (2)", " (3)" before the extension. The project and its one composition
 * are named after the first file, without its extension. Without start offsets the composition
 * plays the files one after another; when any file has one, the files are the tracks of a
 * multitrack sequence, each from its offset (0 when it has none), and the composition plays it.
 */
export function partnerImportRequest(files: readonly ImportLinkFile[]): ImportRequest {
  const taken = new Set<string>();
  const refs = fileNames(files, taken);
  const title = stem(refs[0]) || refs[0];
  const media: [string, NonNullable<ImportRequest['add_media']>[string]][] = refs.map((ref, i) => [
    ref,
    { url: files[i].uri, retry_until_found: true },
  ]);
  let clips = refs;
  if (files.some((f) => f.start_offset !== null)) {
    const sequence = unique(SEQUENCE_NAME, taken);
    media.push([sequence, { tracks: refs.map((ref, i) => ({ media: ref, offset: files[i].start_offset?.seconds ?? 0 })) }]);
    clips = [sequence];
  }
  return {
    project_name: title,
    // fromEntries defines own properties: a file named "__proto__" stays an ordinary reference.
    add_media: Object.fromEntries(media),
    add_compositions: [{ name: title, clips: clips.map((media) => ({ media })) }],
  };
}

/** The media references the files get in the project, in order (what the import page shows). */
export const fileNames = (files: readonly ImportLinkFile[], taken = new Set<string>()): string[] =>
  files.map((f) => unique(displayName(f), taken));

function displayName(file: ImportLinkFile): string {
  const given = clean(file.name ?? '');
  if (given) return given;
  const url = new URL(file.uri);
  const last = url.pathname.split('/').filter(Boolean).pop() ?? '';
  return clean(safeDecode(last)) || url.hostname;
}

function unique(name: string, taken: Set<string>): string {
  let candidate = name;
  for (let n = 2; taken.has(candidate); n++) {
    const ext = extension(name);
    const suffix = ` (${n})`;
    candidate = `${stem(name).slice(0, MAX_NAME - suffix.length - ext.length)}${suffix}${ext}`;
  }
  taken.add(candidate);
  return candidate;
}

/** Control characters would make a name no import request could carry. */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/g;
const clean = (name: string): string => name.replace(CONTROL, '').trim().slice(0, MAX_NAME);

const extension = (name: string): string => /(\.[A-Za-z0-9]{1,5})$/.exec(name)?.[1] ?? '';
const stem = (name: string): string => name.slice(0, name.length - extension(name).length);

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
