import { createInterface } from 'node:readline/promises';
import { Writable } from 'node:stream';
import type { Command } from 'commander';
import { ApiError, createClient } from '../../sdk/client';
import { clientTimeouts, loadSession, normalizeBaseUrl, removeSession, saveSession } from '../lib/config';
import { CliError, describeFailure, Exit } from '../lib/exit';
import { note, printFields, printJson } from '../lib/output';
import { action, withJson } from '../lib/run';

const DEFAULT_BASE_URL = 'http://localhost:8080/v1';

/** `mps login`, `mps logout`, `mps status`. */
export function registerAuth(program: Command): void {
  withJson(program.command('login'))
    .description('check a token with GET /status and store it with the base URL in the config dir (mode 0600)')
    .option('--base-url <url>', `the API's base URL (asked when not given; ${DEFAULT_BASE_URL} by default)`)
    .option('--token <token>', 'a personal API token (asked without echo when not given)')
    .action(
      action(async (ctx, opts: { baseUrl?: string; token?: string }) => {
        const answers = await askMissing(opts);
        const baseUrl = normalizeBaseUrl(answers.baseUrl || DEFAULT_BASE_URL);
        if (!answers.token) throw new CliError(Exit.usage, '--token: a token is needed (make one with the admin CLI: admin token create)');
        const status = await createClient({ baseUrl, token: answers.token, ...clientTimeouts() })
          .status()
          .catch((err: unknown) => {
            // Every service answers GET /status: a 404 means the base URL is not the API's.
            if (err instanceof ApiError && err.status === 404) {
              throw new CliError(
                Exit.usage,
                `--base-url: ${baseUrl} looks wrong: GET /status is not there (${err.message}); give the API's base URL, ending in /v1`,
              );
            }
            // No session yet to name the URL in the message: name the one being tried.
            const failure = describeFailure(err, baseUrl);
            throw failure.code === Exit.unavailable ? new CliError(failure.code, failure.message) : err;
          });
        const path = await saveSession({ baseUrl, token: answers.token });
        if (ctx.json) printJson(status);
        else note(`logged in to ${status.drive_name} (${status.drive_id}) at ${baseUrl}; saved in ${path}`);
      }),
    );

  withJson(program.command('logout'))
    .description('forget the stored token')
    .action(
      action(async (ctx) => {
        const removed = await removeSession();
        if (ctx.json) printJson({ logged_out: removed });
        else note(removed ? 'logged out' : 'was not logged in');
      }),
    );

  withJson(program.command('status'))
    .description('the drive the token belongs to and the API version')
    .action(
      action(async (ctx) => {
        const session = await ctx.session();
        const status = await (await ctx.client()).status();
        if (ctx.json) printJson(status);
        else
          printFields([
            ['drive', `${status.drive_name} (${status.drive_id})`],
            ['api version', status.api_version],
            ['base url', session.baseUrl],
          ]);
      }),
    );
}

/** Asks for what the command line left out; the token without echo when stdin is a terminal. */
async function askMissing(opts: { baseUrl?: string; token?: string }): Promise<{ baseUrl?: string; token?: string }> {
  if (opts.baseUrl !== undefined && opts.token !== undefined) return opts;
  const stored = await loadSession({ ...process.env, MPS_TOKEN: process.env.MPS_TOKEN || '-' }).catch(() => undefined);
  let muted = false;
  const output = new Writable({
    write(chunk, _encoding, done) {
      if (!muted) process.stderr.write(chunk);
      done();
    },
  });
  const rl = createInterface({ input: process.stdin, output, terminal: Boolean(process.stdin.isTTY) });
  // stdin at its end (a script's empty pipe) would leave a question unanswered forever.
  const closed = new Promise<never>((_, reject) =>
    rl.once('close', () => reject(new CliError(Exit.usage, 'no answer on stdin: give --base-url and --token'))),
  );
  closed.catch(() => undefined);
  // On a terminal readline takes Ctrl-C itself (and would only pause): stop as any command does.
  rl.on('SIGINT', () => {
    process.stderr.write('\n');
    process.exit(Exit.interrupted);
  });
  const ask = (question: string) => Promise.race([rl.question(question), closed]);
  try {
    const fallback = stored?.baseUrl ?? DEFAULT_BASE_URL;
    const baseUrl = opts.baseUrl ?? ((await ask(`Base URL [${fallback}]: `)).trim() || fallback);
    let token = opts.token;
    if (token === undefined) {
      const question = ask('Token: ');
      muted = Boolean(process.stdin.isTTY);
      token = (await question).trim();
      muted = false;
      if (process.stdin.isTTY) process.stderr.write('\n');
    }
    return { baseUrl, token };
  } finally {
    rl.close();
  }
}
