// Sliding-window limiter: at most `limit` accepted calls per key in any `windowMs`. Each key keeps a
// queue of accepted timestamps, pruned from the front on every check (amortised O(1) per call).

interface Window {
  times: number[];
  head: number;
}

export type RateDecision = { ok: true } | { ok: false; retryAtMs: number };

export class SlidingWindowLimiter {
  #windows = new Map<string, Window>();

  constructor(
    public limit: number,
    public windowMs: number,
  ) {}

  /** Accepts and records the call, or says when the oldest call in the window ages out. */
  take(key: string, nowMs: number): RateDecision {
    let w = this.#windows.get(key);
    if (!w) {
      w = { times: [], head: 0 };
      this.#windows.set(key, w);
    }
    const cutoff = nowMs - this.windowMs;
    while (w.head < w.times.length && w.times[w.head]! <= cutoff) w.head++;
    if (w.head > 64 && w.head * 2 > w.times.length) {
      w.times = w.times.slice(w.head);
      w.head = 0;
    }
    if (w.times.length - w.head >= this.limit) return { ok: false, retryAtMs: w.times[w.head]! + this.windowMs };
    w.times.push(nowMs);
    return { ok: true };
  }

  /** Drops windows with no call left in them (called periodically; keeps memory bounded). */
  prune(nowMs: number): void {
    const cutoff = nowMs - this.windowMs;
    for (const [key, w] of this.#windows) {
      const last = w.times[w.times.length - 1];
      if (last === undefined || last <= cutoff) this.#windows.delete(key);
    }
  }

  clear(): void {
    this.#windows.clear();
  }
}
