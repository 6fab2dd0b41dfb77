// What every command family of the CLI is built with: where it writes, the Temporal client (connected
// on first use), and the wiring that makes a command write through io and throw instead of exiting.
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import type { ProgressStream } from './progress';

export interface CliIo {
  stdout: { write(chunk: string): boolean };
  stderr: ProgressStream;
  env: NodeJS.ProcessEnv;
}

export interface CliContext {
  io: CliIo;
  /** The Temporal client, connected by the first command that needs it. */
  client(): Promise<Client>;
  /** Writes through io, reports a usage error on one line, and throws instead of exiting. */
  wire(command: Command): Command;
}

export function cliContext(io: CliIo, connect: () => Promise<Client>): CliContext {
  let client: Client | undefined;
  return {
    io,
    client: async () => (client ??= await connect()),
    wire: (command) =>
      command
        .configureOutput({
          writeOut: (s) => void io.stdout.write(s),
          writeErr: (s) => void io.stderr.write(s),
          outputError: (s, write) => write(`${s.trim().split('\n')[0]}\n`),
        })
        .exitOverride(),
  };
}

/** The options of the commands that start a workflow (export, agent). */
export interface StartCommandOpts {
  requestId?: string;
  wait?: boolean;
  json?: boolean;
}

/** Collects a repeatable option's values. */
export const collect = (value: string, previous: string[] = []) => [...previous, value];
