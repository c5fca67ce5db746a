import type { Command } from 'commander';
import { createClient, type Client } from '../../sdk/client';
import { clientTimeouts, loadSession, type Session } from './config';
import { CliError, describeFailure, Exit } from './exit';
import { note } from './output';

/** What a command runs with: the session's client, whether --json was asked, and Ctrl-C as a signal. */
export type Context = {
  json: boolean;
  signal: AbortSignal;
  session(): Promise<Session>;
  client(): Promise<Client>;
};

/** Adds --json, which every command has: the API's JSON as it is on stdout, for scripts. */
export function withJson(command: Command): Command {
  return command.option('--json', 'print the API JSON as it is (for scripts)');
}

/**
 * Wraps a command's action: builds its context, maps what it throws to a message on stderr and
 * an exit code, and turns the first Ctrl-C into an abort (a second one exits at once). An
 * interrupted command exits 130 without waiting for sockets to close.
 */
export function action<A extends unknown[]>(run: (ctx: Context, ...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    const command = args[args.length - 1] as Command;
    const controller = new AbortController();
    let interrupts = 0;
    const onSigint = () => {
      interrupts += 1;
      if (interrupts > 1) process.exit(Exit.interrupted);
      controller.abort();
    };
    process.on('SIGINT', onSigint);
    let session: Session | undefined;
    const ctx: Context = {
      json: Boolean(command.opts().json),
      signal: controller.signal,
      session: async () => (session ??= await loadSession()),
      client: async () => createClient({ ...(await ctx.session()), ...clientTimeouts() }),
    };
    try {
      await run(ctx, ...args);
    } catch (err) {
      const failure =
        controller.signal.aborted && !(err instanceof CliError)
          ? { code: Exit.interrupted, message: 'interrupted' }
          : describeFailure(err, session?.baseUrl);
      note(`mps: ${failure.message}`);
      if (failure.code === Exit.interrupted) process.exit(Exit.interrupted);
      process.exitCode = failure.code;
    } finally {
      process.off('SIGINT', onSigint);
    }
  };
}
