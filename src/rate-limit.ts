// Sliding-window arithmetic for the per-project agent rate limiter (src/workflows/rate-limiter.ts).
// Pure and deterministic: times are plain epoch milliseconds handed in by the caller, so the same
// functions run inside the workflow sandbox and in unit tests.
//
// Model: a permit granted at time t occupies one slot of the window until t + windowMs + marginMs.
// The API measures its own window when our request arrives, a little after the grant; the margin
// absorbs that delay, so the API never sees limit + 1 requests in any window of its own.

export interface WindowLimit {
  /** Permits per window (the API's 100). */
  limit: number;
  /** Window length in ms (the API's hour). */
  windowMs: number;
  /** Extra time a grant keeps its slot, covering grant-to-request latency. Default: defaultMarginMs(windowMs). */
  marginMs?: number;
}

/**
 * Default safety margin: 5% of the window, at least 500 ms and at most 60 s. An hour's window loses
 * one minute (1.7%), a 10 s test window half a second.
 */
export function defaultMarginMs(windowMs: number): number {
  return Math.min(60_000, Math.max(500, Math.round(windowMs * 0.05)));
}

function marginOf(limit: WindowLimit): number {
  return limit.marginMs ?? defaultMarginMs(limit.windowMs);
}

/** When a grant made at grantedAtMs frees its slot. */
export function slotFreeAt(grantedAtMs: number, limit: WindowLimit): number {
  return grantedAtMs + limit.windowMs + marginOf(limit);
}

/** The grant times that still occupy a slot at nowMs, oldest first (input order kept). */
export function pruneGrants(grantTimesMs: readonly number[], nowMs: number, limit: WindowLimit): number[] {
  return grantTimesMs.filter((t) => slotFreeAt(t, limit) > nowMs);
}

/** How many permits may be granted at nowMs (0..limit). */
export function availablePermits(grantTimesMs: readonly number[], nowMs: number, limit: WindowLimit): number {
  return Math.max(0, limit.limit - pruneGrants(grantTimesMs, nowMs, limit).length);
}

/**
 * The earliest time at or after nowMs when one more permit may be granted: nowMs while under the
 * limit, otherwise when the oldest grant that keeps the window full frees its slot.
 */
export function nextFreeAt(grantTimesMs: readonly number[], nowMs: number, limit: WindowLimit): number {
  const live = pruneGrants(grantTimesMs, nowMs, limit).sort((a, b) => a - b);
  if (live.length < limit.limit) return nowMs;
  // With n live grants and room for `limit`, the (n - limit + 1)-th oldest must leave first.
  const blocking = live[live.length - limit.limit]!;
  return Math.max(nowMs, slotFreeAt(blocking, limit));
}

export interface GrantPlan {
  /** How many queued requests to grant now, FIFO. */
  grantNow: number;
  /** When to look again if requests remain queued after this grant; null when none remain. */
  wakeAtMs: number | null;
}

/**
 * What the limiter does at nowMs with `queued` waiting requests: grant as many as fit, and, if some
 * must still wait, when the next slot frees (accounting for the grants made now).
 */
export function planGrants(grantTimesMs: readonly number[], queued: number, nowMs: number, limit: WindowLimit): GrantPlan {
  const grantNow = Math.min(Math.max(0, queued), availablePermits(grantTimesMs, nowMs, limit));
  if (grantNow >= queued) return { grantNow, wakeAtMs: null };
  const after = [...grantTimesMs, ...Array.from({ length: grantNow }, () => nowMs)];
  return { grantNow, wakeAtMs: nextFreeAt(after, nowMs, limit) };
}

/** The least time in which `count` permits can be granted from an empty window: full windows after the first. */
export function theoreticalDrainMs(count: number, limit: Pick<WindowLimit, 'limit' | 'windowMs'>): number {
  if (count <= 0) return 0;
  return Math.floor((count - 1) / limit.limit) * limit.windowMs;
}
