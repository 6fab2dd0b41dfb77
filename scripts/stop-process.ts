// Stopping a process the scripts started: one signal, a grace period, then SIGKILL. Plain Node, so any
// script may import it.

import { readFileSync } from 'node:fs';

/**
 * Whether the process runs. A zombie does not: a process whose parent has exited belongs to PID 1, and
 * where PID 1 is no init (a container without one, this machine's VM) it is reaped late or never, and a
 * zombie answers signal 0: a stop would wait on it as long (the likely cause of one node-loss run's hang).
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // Where there is no /proc, a process answering signal 0 runs.
  return processState(pid) !== 'Z';
}

/** The state letter of Linux's /proc/<pid>/stat (R, S, Z...); undefined where there is none (gone, or no /proc). */
export function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (command) state ...": the command may hold spaces and parentheses, the state follows the last ')'.
    return stat.charAt(stat.lastIndexOf(')') + 2) || undefined;
  } catch {
    return undefined;
  }
}

export interface StopOptions {
  /** The first signal: SIGTERM lets the process drain (a rolling restart); SIGKILL is a crash. */
  signal?: NodeJS.Signals;
  /** How long the process has to exit on that signal before it is SIGKILLed. Default 30 s. */
  graceMs?: number;
}

/** Sends `signal`, waits up to `graceMs` for the exit, SIGKILLs past it; returns once the process is gone. */
export async function stopProcess(
  pid: number,
  { signal = 'SIGTERM', graceMs = 30_000 }: StopOptions = {},
): Promise<void> {
  process.kill(pid, signal);
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  const killedBy = Date.now() + KILLED_EXIT_MS;
  while (isAlive(pid)) {
    if (Date.now() > killedBy) throw new Error(`process ${pid} still runs ${KILLED_EXIT_MS / 1000} s after SIGKILL`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A SIGKILLed process is gone within milliseconds; one that is not is stuck in the kernel (say so). */
const KILLED_EXIT_MS = 10_000;
