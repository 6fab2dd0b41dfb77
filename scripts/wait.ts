// Waiting on a condition with a deadline, for the scripts, the benchmarks and the tests: no fixed sleeps
// to wait for state. Plain Node (no Temporal), so anything may import it.

export interface WaitOptions {
  /** Give up after this long. Default 10 s. */
  timeoutMs?: number;
  /** Pause between two checks. Default 50 ms. */
  intervalMs?: number;
  /** What is awaited, for the timeout's message; a function is asked at the timeout (it may name the last state seen). */
  what?: string | (() => string);
}

/** Polls predicate until it returns a truthy value (returned) or the deadline passes (throws). */
export async function waitFor<T>(
  predicate: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 50, what = 'condition' }: WaitOptions = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
