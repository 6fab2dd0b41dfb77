// Stopping a process the scripts started: one signal, a grace period, then SIGKILL. Plain Node, so any
// script may import it.

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
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
  while (isAlive(pid)) await new Promise((resolve) => setTimeout(resolve, 20));
}
