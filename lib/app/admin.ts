import { AppError } from '../domain/errors';
import { streamCategory, streams } from '../domain/ids';
import {
  DEFAULT_SETTINGS,
  type DriveEvent,
  type DriveSettings,
  type DriveState,
  type DriveUpdated,
  driveDecider,
  type TokenEvent,
  type TokenState,
  tokenDecider,
} from '../domain/tenancy';
import type { Clock, Ids } from '../ports/clock';
import type { EventStore, Position, StoredEvent } from '../ports/event-store';
import type { SecretBox } from '../ports/secret-box';
import { handleCommand, loadState } from './command-handler';
import { createBalances } from './balances';
import { generateToken, generateWebhookSecret } from './tokens';
import type { ReadQueries } from '../ports/read-store';
import { countUnfinished } from './admission';
import type { SnapshotStore } from './snapshots';

/** Operator use cases behind `npm run admin` (DESIGN §6). They write to the event store only. */

/**
 * `secrets` seals webhook secrets before they go into drive events (the CLI always passes it).
 * Without it they are stored as given, as before sealing existed: only tests omit it.
 */
export type AdminDeps = { store: EventStore; clock: Clock; ids: Ids; secrets?: SecretBox };

/** What a drive event carries of a webhook secret: sealed for that drive when a SecretBox is at hand. */
const stored = (deps: AdminDeps, driveId: string, secret: string): string => deps.secrets?.seal(secret, driveId) ?? secret;

const meta = (driveId: string) => ({ partition_key: driveId, drive_id: driveId, actor: 'admin-cli' });

/** A user's names as tokens carry them (what a publish shows as `published_by`); each optional. */
export type UserNames = { firstName?: string; lastName?: string };

export async function createDrive(
  deps: AdminDeps,
  input: { name: string; partner?: boolean; credits?: number; mediaSeconds?: number | null; user?: UserNames },
) {
  const driveId = deps.ids.uuid();
  const webhookSecret = generateWebhookSecret();
  const settings: DriveSettings = {
    ...DEFAULT_SETTINGS,
    partner: input.partner ?? false,
    ai_credits: input.credits ?? DEFAULT_SETTINGS.ai_credits,
    media_seconds: input.mediaSeconds ?? DEFAULT_SETTINGS.media_seconds,
  };
  await handleCommand(
    deps.store,
    streams.drive(driveId),
    driveDecider,
    {
      type: 'CreateDrive',
      drive: { drive_id: driveId, name: input.name, webhook_secret: stored(deps, driveId, webhookSecret), settings },
      now: deps.clock.now().toISOString(),
    },
    { newId: deps.ids.uuid, metadata: meta(driveId) },
  );
  const { token } = await createToken(deps, { driveId, name: 'default', ...input.user });
  return { drive_id: driveId, drive_name: input.name, token, webhook_secret: webhookSecret };
}

/** A new token for a drive; without `userId` it is a new user's (the token's creator). */
export async function createToken(deps: AdminDeps, input: { driveId: string; name?: string; userId?: string } & UserNames) {
  const { state } = await loadState(deps.store, streams.drive(input.driveId), driveDecider);
  if (!state.exists) throw new AppError('not_found', `drive ${input.driveId} does not exist`);
  const { tokenId, token, secretHash } = generateToken();
  const userId = input.userId ?? deps.ids.uuid();
  await handleCommand(
    deps.store,
    streams.token(tokenId),
    tokenDecider,
    {
      type: 'CreateToken',
      token: {
        token_id: tokenId,
        secret_hash: secretHash,
        drive_id: input.driveId,
        user_id: userId,
        name: input.name ?? 'api token',
        first_name: input.firstName ?? null,
        last_name: input.lastName ?? null,
      },
      now: deps.clock.now().toISOString(),
    },
    { newId: deps.ids.uuid, metadata: meta(input.driveId) },
  );
  return {
    token_id: tokenId,
    token,
    drive_id: input.driveId,
    user_id: userId,
    first_name: input.firstName ?? null,
    last_name: input.lastName ?? null,
  };
}

export async function revokeToken(deps: AdminDeps, tokenId: string) {
  const { state } = await loadState(deps.store, streams.token(tokenId), tokenDecider);
  if (!state.exists) throw new AppError('not_found', `token ${tokenId} does not exist`);
  await handleCommand(
    deps.store,
    streams.token(tokenId),
    tokenDecider,
    { type: 'RevokeToken', now: deps.clock.now().toISOString() },
    { newId: deps.ids.uuid, metadata: meta(state.token.drive_id) },
  );
  return { token_id: tokenId, revoked: true };
}

export async function updateDrive(deps: AdminDeps, driveId: string, changes: DriveUpdated['data']['changes']) {
  const result = await handleCommand(
    deps.store,
    streams.drive(driveId),
    driveDecider,
    {
      type: 'UpdateDrive',
      changes:
        changes.webhook_secret === undefined ? changes : { ...changes, webhook_secret: stored(deps, driveId, changes.webhook_secret) },
      now: deps.clock.now().toISOString(),
    },
    { newId: deps.ids.uuid, metadata: meta(driveId) },
  );
  if (!result.state.exists) throw new AppError('not_found', `drive ${driveId} does not exist`);
  return {
    drive_id: driveId,
    drive_name: result.state.name,
    settings: result.state.settings,
    // Shown when rotated (as at creation, the only times it is printed).
    ...(changes.webhook_secret !== undefined && { webhook_secret: changes.webhook_secret }),
  };
}

/**
 * A drive, its settings and its balances as its streams say now (`admin drive show`); with the
 * read store at hand (`jobs`), its unfinished jobs too (what admission control counts against
 * MAX_UNFINISHED_JOBS_PER_DRIVE), and the balance read from its snapshot.
 */
export async function showDrive(deps: AdminDeps & { snapshots?: SnapshotStore; jobs?: Pick<ReadQueries, 'count'> }, driveId: string) {
  const { state } = await loadState(deps.store, streams.drive(driveId), driveDecider);
  if (!state.exists) throw new AppError('not_found', `drive ${driveId} does not exist`);
  const balances = await createBalances(deps).show(driveId);
  const jobs = deps.jobs && { unfinished: await countUnfinished(deps.jobs, driveId) };
  return { drive_id: driveId, drive_name: state.name, settings: state.settings, balances, ...(jobs && { jobs }) };
}

/**
 * Every drive or token stream folded from `$all` (`admin drive list`, `admin token list`). No read
 * model keeps drives or tokens, so this reads the whole event store, a page at a time: seconds per
 * million events, fine for an operator's command and never on a request's path.
 */
async function foldCategory<S>(store: EventStore, category: string, initial: () => S, evolve: (s: S, e: StoredEvent) => S) {
  const states = new Map<string, S>();
  for (let after: Position | null = null; ;) {
    const page = await store.readAll(after, 1000);
    if (page.length === 0) return states;
    for (const event of page) {
      if (streamCategory(event.streamId) !== category) continue;
      states.set(event.streamId, evolve(states.get(event.streamId) ?? initial(), event));
    }
    after = page[page.length - 1].position;
  }
}

const foldTokens = (store: EventStore) =>
  foldCategory<TokenState>(store, 'token', tokenDecider.initialState, (s, e) => tokenDecider.evolve(s, e as unknown as TokenEvent));

/** Every drive: id, name, partner access, media-seconds allowance and its live tokens, oldest first. */
export async function listDrives(deps: Pick<AdminDeps, 'store'>) {
  const drives = await foldCategory<DriveState>(deps.store, 'drive', driveDecider.initialState, (s, e) =>
    driveDecider.evolve(s, e as unknown as DriveEvent),
  );
  const liveTokens = new Map<string, number>();
  for (const t of (await foldTokens(deps.store)).values()) {
    if (t.exists && !t.revoked) liveTokens.set(t.token.drive_id, (liveTokens.get(t.token.drive_id) ?? 0) + 1);
  }
  return [...drives].flatMap(([streamId, d]) => {
    if (!d.exists) return [];
    const driveId = streamId.slice('drive-'.length);
    const { partner, media_seconds } = d.settings;
    return [
      { drive_id: driveId, drive_name: d.name, partner, media_seconds_allowance: media_seconds, tokens: liveTokens.get(driveId) ?? 0 },
    ];
  });
}

/** Tokens (of one drive, or all): id, drive, user and names, name, when made, whether revoked. Never a secret or its hash. */
export async function listTokens(deps: Pick<AdminDeps, 'store'>, driveId?: string) {
  return [...(await foldTokens(deps.store)).values()].flatMap((t) => {
    if (!t.exists || (driveId !== undefined && t.token.drive_id !== driveId)) return [];
    const { token_id, drive_id, user_id, name, created_at } = t.token;
    const names = { first_name: t.token.first_name ?? null, last_name: t.token.last_name ?? null };
    return [{ token_id, drive_id, user_id, ...names, name, created_at, revoked: t.revoked }];
  });
}
