// The long-running programs of `npm run cluster` (server, UI server): started detached with their
// output in a log file, recorded in a state file, and stopped only when the recorded PID is still the
// program that was started.
import { spawn } from 'node:child_process';
import { existsSync, openSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { isAlive, stopProcess } from '../stop-process';

export interface ProcessState {
  pid: number;
  command: string;
  /** Anything else worth knowing about the running process (the server's dynamic config file). */
  [key: string]: unknown;
}

export function readState(file: string): ProcessState | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const state = JSON.parse(readFileSync(file, 'utf8')) as ProcessState;
    return Number.isInteger(state.pid) ? state : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The recorded process, if it is still running that program. A PID left in a state file from before
 * a reboot may belong to something else by now: that one is never signalled.
 */
export function runningProcess(file: string): ProcessState | undefined {
  const state = readState(file);
  if (!state || !isAlive(state.pid)) return undefined;
  const cmdline = `/proc/${state.pid}/cmdline`;
  if (
    existsSync('/proc/self/cmdline') &&
    !(existsSync(cmdline) && readFileSync(cmdline, 'utf8').includes(state.command))
  ) {
    return undefined;
  }
  return state;
}

/** A log file's size: where the output of a process started now begins. */
export function logOffset(file: string): number {
  return existsSync(file) ? statSync(file).size : 0;
}

/**
 * The last lines of a log file from `offset` on (this run's output), for error messages: Go stack
 * traces dropped from JSON log lines and every line cut to 400 characters, so the cause stays readable.
 */
export function tail(file: string, { lines = 15, offset = 0 } = {}): string {
  if (!existsSync(file)) return `(no ${file})`;
  const text = readFileSync(file).subarray(offset).toString('utf8').trimEnd();
  return text
    .split('\n')
    .slice(-lines)
    .map((line) => line.replace(/,"stacktrace":".*"\}$/, '}'))
    .map((line) => (line.length > 400 ? `${line.slice(0, 400)}...` : line))
    .join('\n');
}

export interface Started {
  pid: number;
  /** Where this run's output begins in the log file. */
  logOffset: number;
  /** Rejects when the process exits (for a server: it failed to start); never resolves. */
  exited: Promise<never>;
}

/** Starts a program in the background, detached from this process, appending its output to `log`. */
export function startDetached(
  command: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; log: string; stateFile: string; extra?: Record<string, unknown> },
): Started {
  const offset = logOffset(options.log);
  const out = openSync(options.log, 'a');
  const child = spawn(command, args, { env: options.env, detached: true, stdio: ['ignore', out, out] });
  if (child.pid === undefined) throw new Error(`could not start ${command}`);
  const state: ProcessState = { ...options.extra, pid: child.pid, command };
  writeFileSync(options.stateFile, `${JSON.stringify(state)}\n`);
  const exited = new Promise<never>((_, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`${command} exited (${signal ?? `code ${code}`})`)));
  });
  // Observed by whoever awaits it; without a listener an exit after start-up is not an unhandled rejection.
  exited.catch(() => undefined);
  child.unref();
  return { pid: child.pid, logOffset: offset, exited };
}

/** Stops the recorded process (stopProcess: SIGTERM, SIGKILL after 30 s). Returns its state if it was running. */
export async function stopRecorded(stateFile: string): Promise<ProcessState | undefined> {
  const state = runningProcess(stateFile);
  rmSync(stateFile, { force: true });
  if (!state) return undefined;
  await stopProcess(state.pid);
  return state;
}

/** Whether `url` answers 2xx within 3 s: the health check of the cluster's HTTP processes. */
export async function answersOk(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(3_000) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

/** Polls until check() is true; fails early when the process exits, with the tail of its output. */
export async function waitUntil(
  what: string,
  check: () => boolean | Promise<boolean>,
  started: Started,
  logFile: string,
  timeoutMs: number,
) {
  const deadline = Date.now() + timeoutMs;
  const { exited, logOffset: offset } = started;
  let failure: Error | undefined;
  exited.catch((err: unknown) => {
    failure = err instanceof Error ? err : new Error(String(err));
  });
  for (;;) {
    if (failure) throw new Error(`${failure.message} while starting; ${logFile}:\n${tail(logFile, { offset })}`);
    if (await check()) return;
    if (Date.now() > deadline)
      throw new Error(`${what} was not healthy within ${timeoutMs / 1000}s; ${logFile}:\n${tail(logFile, { offset })}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** How a running process was started: command line, environment, the file its output goes to. */
export interface Launch {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  log: string;
}

export function launchOf(pid: number): Launch {
  const [command = '', ...args] = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
  const env: NodeJS.ProcessEnv = {};
  for (const pair of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const at = pair.indexOf('=');
    if (at > 0) env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return { command, args, env, log: readlinkSync(`/proc/${pid}/fd/1`) };
}
