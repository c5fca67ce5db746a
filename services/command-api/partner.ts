import { commandHandler, type HandlerOf } from '../../lib/app/command-handler';
import { driveDecider } from '../../lib/domain/tenancy';
import type { Principal } from '../../lib/app/tenancy';
import { forbidden, invalidInput } from '../../lib/domain/errors';
import { normalHost } from '../../lib/domain/host-names';
import { streams } from '../../lib/domain/ids';
import { IMPORT_LINK_TTL_MS, importLinkDecider, type ImportLinkFile } from '../../lib/domain/import-link';
import type { LaneRoute } from '../../lib/http/express-lane';
import type { SchemaRegistry } from '../../lib/http/schemas';
import type { Clock, Ids } from '../../lib/ports/clock';
import type { EventStore } from '../../lib/ports/event-store';

/**
 * POST /edit_in_descript/schema (partner access): a one-time import link for a partner's files.
 *
 * - Partner access is the drive setting `partner`, read from the drive's stream on every request
 *   (an admin's change applies at once); without it 403 `forbidden`, before the body is looked at.
 * - `partner_drive_id` must be the token's own drive, else 403 `forbidden`: a token speaks for its
 *   drive only, and the id ends up in the imported project's export page metadata.
 * - Every URI's host must be on the drive's `host_allow_list`: the exact host name, compared
 *   without case, a trailing dot and the port; a subdomain does not count (`cdn.example.com` is
 *   not allowed by `example.com`). Then the import's own check of internal addresses applies.
 *   Either refusal is a 400 naming the field, such as `project_schema.files[2].uri`.
 * - Each request makes a new link, `{WEB_URL}/import?nonce=<uuid>`, valid for 3 hours.
 */

export type PartnerDeps = {
  store: EventStore;
  clock: Clock;
  ids: Ids;
  webUrl: string;
  schemas: SchemaRegistry;
  urlRefusal: (url: string) => string | null;
};

export type EditInSchema = {
  partner_drive_id: string;
  project_schema: {
    schema_version: '1.0.0';
    source_id?: string;
    files: { uri: string; name?: string; start_offset?: { seconds: number } }[];
  };
};

/** The route, mounted on Koa only (`mountLaneRoutes`): it is not hot enough for the express lane. */
export function partnerRoute(deps: PartnerDeps): LaneRoute {
  const handlers = {
    drives: commandHandler(deps.store, driveDecider, streams.drive),
    links: commandHandler(deps.store, importLinkDecider, streams.importLink),
  };
  return {
    method: 'POST',
    path: '/edit_in_descript/schema',
    async handle({ auth, body, requestId, log }) {
      const link = await issueImportLink(deps, handlers, auth, body, requestId);
      log.info({ files: link.files, expires_at: link.expires_at }, 'import link issued');
      return { status: 201, body: { url: link.url, expires_at: link.expires_at } };
    },
  };
}

type PartnerHandlers = { drives: HandlerOf<typeof driveDecider>; links: HandlerOf<typeof importLinkDecider> };

export async function issueImportLink(
  deps: PartnerDeps,
  { drives, links }: PartnerHandlers,
  who: Principal,
  body: unknown,
  requestId: string,
) {
  const { state: drive } = await drives.load(who.driveId);
  if (!drive.exists || !drive.settings.partner) throw forbidden('this drive has no partner access; ask the service operator to enable it');
  deps.schemas.assertBody('edit-in-schema', body);
  const request = body as EditInSchema;
  if (request.partner_drive_id.toLowerCase() !== who.driveId.toLowerCase()) {
    throw forbidden(`partner_drive_id ${request.partner_drive_id} is not the drive of this API token`);
  }
  const allowed = new Set(drive.settings.host_allow_list.map(normalHost));
  const files: ImportLinkFile[] = request.project_schema.files.map((f, i) => {
    const field = `project_schema.files[${i}].uri`;
    const host = hostOf(f.uri);
    if (host === null) throw invalidInput(`${field} is not a valid URL`);
    if (!allowed.has(host)) throw invalidInput(`${field}: the host ${host} is not on this drive's host allow list`);
    const refusal = deps.urlRefusal(f.uri);
    if (refusal) throw invalidInput(`${field}: refused: ${refusal}`);
    return { uri: f.uri, name: f.name ?? null, start_offset: f.start_offset ? { seconds: f.start_offset.seconds } : null };
  });

  const nonce = deps.ids.uuid();
  const { events } = await links.handle(
    nonce,
    {
      type: 'IssueImportLink',
      link: {
        nonce,
        drive_id: who.driveId,
        partner_drive_id: request.partner_drive_id.toLowerCase(),
        source_id: request.project_schema.source_id ?? null,
        files,
      },
      validForMs: IMPORT_LINK_TTL_MS,
      now: deps.clock.now().toISOString(),
    },
    {
      newId: () => deps.ids.uuidv7(),
      metadata: { partition_key: nonce, correlation_id: requestId, drive_id: who.driveId, user_id: who.userId },
      expectNew: true,
    },
  );
  const issued = events[0];
  const expires_at = issued.type === 'ImportLinkIssued' ? issued.data.expires_at : '';
  return { url: `${deps.webUrl.replace(/\/+$/, '')}/import?nonce=${nonce}`, expires_at, files: files.length };
}

/** The host of an http(s) URL as allow-list entries are compared: lower case, no trailing dot, no IPv6 brackets. */
function hostOf(uri: string): string | null {
  try {
    return normalHost(new URL(uri).hostname);
  } catch {
    return null;
  }
}
