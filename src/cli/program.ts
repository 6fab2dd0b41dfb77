// The docs-admin CLI (`npm run cli -- <command>`, `npx docs-admin <command>`): start, await, inspect and
// schedule the workflows. One module per command family (src/cli/commands/), composed here; what they
// print is in format.ts. Every input is validated before anything connects or starts; any failure ends
// with exit code != 0 and ONE line on stderr; with `--wait --json` the last stdout line is one JSON object.
import type { Client } from '@temporalio/client';
import { Command, CommanderError } from 'commander';
import { InvalidInputError } from '../client/errors';
import { connectClient, loadTemporalConfig, serviceTokenOf } from '../connection';
import { startTracing, stopTracing, type Tracing } from '../observability/tracing';
import { failureReason } from '../shared/failures';
import { agentCommand } from './commands/agent';
import { exportCommand } from './commands/export';
import { keepCommand, publishCommand } from './commands/keeper';
import { keygenCommand } from './commands/keygen';
import { keysCommand } from './commands/keys';
import { abandonCommand, parkedCommand, resendCommand, resolveCommand } from './commands/operator';
import { scheduleCommand } from './commands/schedule';
import { statusCommand } from './commands/status';
import { tokenCommand } from './commands/token';
import { cliContext, type CliIo } from './context';
import { isPermissionDenied, refusedLine, signedInAs } from './refused';

export type { CliIo } from './context';

/** Exit codes: 0 success, 1 a failure (workflow failed, server error), 2 bad input or usage. */
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** The one stderr line for any error. */
export function errorLine(err: unknown): string {
  let text: string;
  if (err instanceof InvalidInputError) text = `invalid input: ${err.problems.join('; ')}`;
  else if (err instanceof Error && (err.name === 'WorkflowFailedError' || err.name === 'WorkflowUpdateFailedError')) {
    text = `workflow failed: ${failureReason(err.cause ?? err)}`;
  } else if (err instanceof Error) text = err.message;
  else text = String(err);
  return `error: ${text.replace(/\s*\n\s*/g, ' ').trim()}`;
}

function exitCodeOf(err: unknown): number {
  return err instanceof InvalidInputError ? EXIT_USAGE : EXIT_FAILURE;
}

export function buildProgram(io: CliIo, connect: () => Promise<Client>): Command {
  const ctx = cliContext(io, connect);
  return ctx
    .wire(
      new Command('docs-admin')
        .description(
          'Start, await, inspect and schedule the docs-admin workflows (static export, bundle keeper, agent jobs).',
        )
        .showSuggestionAfterError(true),
    )
    .addCommand(exportCommand(ctx))
    .addCommand(agentCommand(ctx))
    .addCommand(keepCommand(ctx))
    .addCommand(publishCommand(ctx))
    .addCommand(statusCommand(ctx))
    .addCommand(parkedCommand(ctx))
    .addCommand(resolveCommand(ctx))
    .addCommand(resendCommand(ctx))
    .addCommand(abandonCommand(ctx))
    .addCommand(scheduleCommand(ctx))
    .addCommand(keygenCommand(ctx))
    .addCommand(keysCommand(ctx))
    .addCommand(tokenCommand(ctx));
}

/**
 * Runs the CLI on argv (without node and script); resolves with the exit code. Without `connect` it
 * connects from io.env when a command needs Temporal, and closes that connection at the end; a given
 * `connect` (tests, embedding) keeps ownership of its client.
 */
export async function runCli(argv: string[], io: CliIo, connect?: () => Promise<Client>): Promise<number> {
  let owned: Client | undefined;
  let connected: Client | undefined;
  let tracing: Tracing | undefined;
  let command = '';
  const connectOnce =
    connect ??
    (async () => {
      // Started first, under the CLI's own service name (connectClient would start it as the client library's).
      tracing = await startTracing(io.env, 'docs-admin-cli');
      owned = await connectClient(io.env);
      return owned;
    });
  const program = buildProgram(io, async () => (connected = await connectOnce())).hook(
    'preAction',
    (_program, action) => {
      // The command's words after `docs-admin` (`schedule list`), for a refusal's line.
      const words: string[] = [];
      for (let c: Command | null = action; c?.parent; c = c.parent) words.unshift(c.name());
      command = words.join(' ');
    },
  );
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version are "errors" with exit code 0; usage errors were already printed (one line).
      return err.exitCode === 0 ? 0 : EXIT_USAGE;
    }
    if (isPermissionDenied(err)) {
      const namespace = connected?.options.namespace ?? loadTemporalConfig(io.env).namespace;
      // The bearer token the connection sent (a service's under sign-on, else TEMPORAL_API_KEY): its claims
      // only word the line.
      const token = (connected && serviceTokenOf(connected.connection)) ?? io.env.TEMPORAL_API_KEY;
      io.stderr.write(`${refusedLine(command, namespace, signedInAs(token, namespace))}\n`);
      return EXIT_FAILURE;
    }
    io.stderr.write(`${errorLine(err)}\n`);
    return exitCodeOf(err);
  } finally {
    await owned?.connection.close();
    // The start's spans are exported before the process exits.
    if (tracing) await stopTracing();
  }
}
