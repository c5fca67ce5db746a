import { Command, InvalidArgumentError, Option } from 'commander';
import { createDrive, createToken, listDrives, listTokens, revokeToken, showDrive, updateDrive, type AdminDeps } from '../lib/app/admin';
import { generateWebhookSecret } from '../lib/app/tokens';
import { AppError } from '../lib/domain/errors';
import type { AccessLevel, DriveUpdated } from '../lib/domain/tenancy';
import { ConfigError, loadConfig } from '../lib/config';
import { openDeadLetters, openEventStore, openReadStore, openSecretBox } from '../lib/adapters/from-config';
import { parseHostAllowList } from '../lib/adapters/http/outbound-fetcher';
import type { DeadLetterStore } from '../lib/ports/dead-letters';
import { randomIds, systemClock } from '../lib/adapters/system/clock';
import { readStoreSnapshots } from '../lib/app/snapshots';
import pino from 'pino';

/** `npm run admin -- <command>`: operator commands against the configured event store. Prints JSON. */

const LEVELS: AccessLevel[] = ['public', 'unlisted', 'drive', 'private'];

const wholeNumber = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number ≥ 0');
  return n;
};
const uuid = (value: string) => {
  if (!/^[0-9a-f-]{36}$/i.test(value)) throw new InvalidArgumentError('expected a UUID');
  return value;
};
const levels = (value: string) => {
  const list = value.split(',').map((s) => s.trim()) as AccessLevel[];
  const bad = list.find((l) => !LEVELS.includes(l));
  if (bad) throw new InvalidArgumentError(`"${bad}" is not one of ${LEVELS.join(', ')}`);
  return list;
};

/** A first or last name as published pages show it: trimmed, 1 to 100 characters, no control characters. */
const personName = (value: string) => {
  const name = value.trim();
  // eslint-disable-next-line no-control-regex
  if (name === '' || name.length > 100 || /[\u0000-\u001f\u007f]/.test(name)) {
    throw new InvalidArgumentError('expected 1 to 100 characters, without control characters');
  }
  return name;
};

/** Refused here, naming the entry: `*`, `http://x.com` or `a b` would be stored and never match. */
const hostAllowList = (value: string) => {
  try {
    return parseHostAllowList(value.split(','));
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
};

async function run(action: (deps: AdminDeps) => Promise<unknown>) {
  const config = loadConfig();
  const store = openEventStore(config);
  try {
    const deps = { store, clock: systemClock, ids: randomIds, secrets: openSecretBox(config) };
    process.stdout.write(`${JSON.stringify(await action(deps), null, 2)}\n`);
  } finally {
    await store.close();
  }
}

const program = new Command('admin').description('Operate drives and API tokens').showHelpAfterError();
const drive = program.command('drive').description('drives (workspaces)');
drive
  .command('create')
  .requiredOption('--name <name>', 'drive name')
  .option('--partner', 'grant partner access', false)
  .option('--credits <n>', 'AI credits', wholeNumber)
  .option('--media-seconds <n>', 'media seconds balance (default unlimited)', wholeNumber)
  .option('--first-name <name>', "the first token's user's first name (shown as a publish's published_by)", personName)
  .option('--last-name <name>', "the first token's user's last name", personName)
  .action((o) =>
    run((deps) =>
      createDrive(deps, {
        name: o.name,
        partner: o.partner,
        credits: o.credits,
        mediaSeconds: o.mediaSeconds,
        user: { firstName: o.firstName, lastName: o.lastName },
      }),
    ),
  );
drive
  .command('update')
  .requiredOption('--drive <id>', 'drive id', uuid)
  .option('--name <name>', 'new name')
  .option('--partner', 'grant partner access')
  .option('--no-partner', 'remove partner access')
  .option('--agent-disabled', 'disable agent usage')
  .option('--no-agent-disabled', 'enable agent usage')
  .option('--allowed-access-levels <list>', `publish access levels allowed (${LEVELS.join(',')})`, levels)
  .addOption(new Option('--default-access-level <level>', 'default publish access level').choices(LEVELS))
  .option('--host-allow-list <hosts>', 'comma-separated host names or IP addresses partner URIs may come from', hostAllowList)
  .option('--credits <n>', 'AI credits balance', wholeNumber)
  .option('--media-seconds <n>', 'media seconds allowance (what is left is this minus what imports used)', wholeNumber)
  .option('--rotate-webhook-secret', 'make a new webhook signing secret (printed once); the old one stops signing at once')
  .action((o) => {
    const changes: Record<string, unknown> = {
      name: o.name,
      partner: o.partner,
      agent_disabled: o.agentDisabled,
      allowed_access_levels: o.allowedAccessLevels,
      default_access_level: o.defaultAccessLevel,
      host_allow_list: o.hostAllowList,
      ai_credits: o.credits,
      media_seconds: o.mediaSeconds,
      webhook_secret: o.rotateWebhookSecret ? generateWebhookSecret() : undefined,
    };
    for (const k of Object.keys(changes)) if (changes[k] === undefined) delete changes[k];
    return run((deps) => updateDrive(deps, o.drive, changes as DriveUpdated['data']['changes']));
  });
drive
  .command('show')
  .description(
    'settings, balances (per kind, media_seconds and ai_credits: the allowance, used, reserved and left) and unfinished jobs (queued or running)',
  )
  .requiredOption('--drive <id>', 'drive id', uuid)
  .action((o) =>
    run(async (deps) => {
      const readSide = await openReadStore(loadConfig());
      try {
        const log = pino({ level: 'warn' }, pino.destination(2));
        return await showDrive({ ...deps, snapshots: readStoreSnapshots(readSide.read, log), jobs: readSide.queries }, o.drive);
      } finally {
        await readSide.close();
      }
    }),
  );
drive
  .command('list')
  .description('every drive: id, name, partner access, media-seconds allowance, live tokens (reads the whole event store)')
  .action(() => run((deps) => listDrives(deps)));
const token = program.command('token').description('API tokens');
token
  .command('list')
  .description('tokens: id, drive, user, first and last name, name, created_at, revoked; never a secret (reads the whole event store)')
  .option('--drive <id>', 'only the tokens of this drive', uuid)
  .action((o) => run((deps) => listTokens(deps, o.drive)));
token
  .command('create')
  .requiredOption('--drive <id>', 'drive id', uuid)
  .option('--name <name>', 'token name')
  .option('--user <id>', 'user the token acts for (default: a new user)', uuid)
  .option('--first-name <name>', "the user's first name (shown as a publish's published_by)", personName)
  .option('--last-name <name>', "the user's last name", personName)
  .action((o) =>
    run((deps) => createToken(deps, { driveId: o.drive, name: o.name, userId: o.user, firstName: o.firstName, lastName: o.lastName })),
  );
token
  .command('revoke')
  .requiredOption('--token-id <id>', 'token id (the part after mps_)')
  .action((o) => run((deps) => revokeToken(deps, o.tokenId)));

/** Dead letters live beside the events (embedded) or the read models (distributed). */
async function withDeadLetters(action: (letters: DeadLetterStore) => Promise<unknown>) {
  const config = loadConfig();
  const readSide = await openReadStore(config);
  const letters = openDeadLetters(config, readSide);
  try {
    process.stdout.write(`${JSON.stringify(await action(letters), null, 2)}\n`);
  } finally {
    await letters.close();
    await readSide.close();
  }
}
const deadLetters = program
  .command('dead-letters')
  .description('events set aside after their handler kept failing (retried by their running consumer)');
deadLetters
  .command('list')
  .option('--source <name>', 'relay, or a consumer group (projections, import-processor)')
  .option('--status <status>', 'dead or retry')
  .action((o) =>
    withDeadLetters(async (letters) =>
      (await letters.list({ source: o.source, status: o.status })).map(({ payload: _p, ...letter }) => letter),
    ),
  );
deadLetters
  .command('show')
  .argument('<id>', 'dead letter id')
  .action((id: string) => withDeadLetters(async (letters) => (await letters.get(id)) ?? notFoundLetter(id)));
deadLetters
  .command('retry')
  .argument('<id>', 'dead letter id')
  .description('mark for retry: a running member of its consumer group (or the relay) handles it again within seconds')
  .action((id: string) =>
    withDeadLetters(async (letters) => ((await letters.markRetry(id)) ? { id, status: 'retry' } : notFoundLetter(id))),
  );
deadLetters
  .command('drop')
  .argument('<id>', 'dead letter id')
  .action((id: string) => withDeadLetters(async (letters) => ((await letters.remove(id)) ? { id, dropped: true } : notFoundLetter(id))));

const notFoundLetter = (id: string): never => {
  throw new AppError('not_found', `no dead letter ${id}`);
};

program.parseAsync().catch((err) => {
  const message = err instanceof AppError || err instanceof ConfigError ? err.message : String(err?.stack ?? err);
  process.stderr.write(`error: ${message}\n`);
  process.exit(1);
});
