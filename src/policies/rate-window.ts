// Sliding-window arithmetic for the agent rate limiter (src/workflows/rate-limiter.ts); pure, times in
// epoch ms. Every permit occupies a slot until its free-at time. The API counts a request when it
// arrives, maybe long after the grant, so a grant holds its slot as a lease until its use is reported,
// then until usedAt + window + margin: the report comes after the call returned, so the API never sees
// limit + 1 of our calls in one window. The margin covers clock differences.

export interface WindowLimit {
  /** Permits per window (the API's 100). */
  limit: number;
  /** Window length in ms (the API's hour). */
  windowMs: number;
  /** Safety margin added to every window. Default: defaultMarginMs(windowMs). */
  marginMs?: number;
  /** How long a grant whose use is never reported holds its slot. Default: defaultLeaseMs(windowMs). */
  leaseMs?: number;
}

/** 1% of the window, at least 250 ms and at most 30 s. */
export function defaultMarginMs(windowMs: number): number {
  return Math.min(30_000, Math.max(250, Math.round(windowMs * 0.01)));
}

/** Two windows: a requester that vanished between grant and report cannot hold a slot for ever. */
export function defaultLeaseMs(windowMs: number): number {
  return 2 * windowMs;
}

const marginOf = (limit: WindowLimit): number => limit.marginMs ?? defaultMarginMs(limit.windowMs);

/** Free-at of a slot just granted (its use not yet reported). */
export function grantedSlotFreeAt(grantedAtMs: number, limit: WindowLimit): number {
  return grantedAtMs + (limit.leaseMs ?? defaultLeaseMs(limit.windowMs)) + marginOf(limit);
}

/**
 * The last moment a granted permit may be used: a call made by then falls in a window that ends before
 * the lease does, even if its report never arrives; a call held up longer must ask again.
 */
export function permitUseByMs(leaseFreeAtMs: number, limit: WindowLimit): number {
  return leaseFreeAtMs - limit.windowMs - marginOf(limit);
}

/** Free-at of a slot whose request was made no later than usedAtMs. */
export function usedSlotFreeAt(usedAtMs: number, limit: WindowLimit): number {
  return usedAtMs + limit.windowMs + marginOf(limit);
}

/** The slots still occupied at nowMs (input order kept). */
export function liveSlots(freeAtMs: readonly number[], nowMs: number): number[] {
  return freeAtMs.filter((t) => t > nowMs);
}

/** How many permits may be granted at nowMs (0..limit). */
export function availablePermits(freeAtMs: readonly number[], nowMs: number, limit: WindowLimit): number {
  return Math.max(0, limit.limit - liveSlots(freeAtMs, nowMs).length);
}

/**
 * The earliest time at or after nowMs when one more permit may be granted: nowMs while under the
 * limit, otherwise when enough occupied slots have freed.
 */
export function nextFreeAt(freeAtMs: readonly number[], nowMs: number, limit: WindowLimit): number {
  const live = liveSlots(freeAtMs, nowMs).sort((a, b) => a - b);
  if (live.length < limit.limit) return nowMs;
  // With n occupied slots and room for `limit`, the (n - limit + 1)-th to free makes room.
  return live[live.length - limit.limit]!;
}

export interface GrantPlan {
  /** How many queued requests to grant now, FIFO. */
  grantNow: number;
  /** When a slot frees if requests remain queued after this grant (a report may free one sooner); null when none remain. */
  wakeAtMs: number | null;
}

/** What the limiter does at nowMs with `queued` waiting requests: grant what fits, and when to look again. */
export function planGrants(freeAtMs: readonly number[], queued: number, nowMs: number, limit: WindowLimit): GrantPlan {
  const grantNow = Math.min(Math.max(0, queued), availablePermits(freeAtMs, nowMs, limit));
  if (grantNow >= queued) return { grantNow, wakeAtMs: null };
  const after = [...freeAtMs, ...Array.from({ length: grantNow }, () => grantedSlotFreeAt(nowMs, limit))];
  return { grantNow, wakeAtMs: nextFreeAt(after, nowMs, limit) };
}

/**
 * How long before a reported slot frees it may be handed on to a queued request (to be used not before
 * it frees): the call is then ready when the slot frees instead of starting its way through Temporal.
 */
export function defaultHandoverMs(windowMs: number): number {
  return Math.min(30_000, Math.round(windowMs / 2));
}

export interface HandoverSlot {
  freeAtMs: number;
  /** The use was reported, so freeAtMs is exact (a lease's end is not: a report may come sooner). */
  reported: boolean;
}

export interface HandoverPlan {
  /** Indices of the slots to hand on now, earliest free first, at most one per queued request. */
  slots: number[];
  /** When the next reported slot comes within reach, if requests remain queued; else null. */
  wakeAtMs: number | null;
}

/** Which occupied slots to hand on ahead of time to `queued` waiting requests at nowMs. */
export function planHandovers(
  slots: readonly HandoverSlot[],
  queued: number,
  nowMs: number,
  handoverMs: number,
): HandoverPlan {
  const candidates = slots
    .map((slot, index) => ({ ...slot, index }))
    .filter((slot) => slot.reported && slot.freeAtMs > nowMs)
    .sort((a, b) => a.freeAtMs - b.freeAtMs);
  const now = candidates.filter((slot) => slot.freeAtMs - handoverMs <= nowMs).slice(0, Math.max(0, queued));
  const later = candidates.find((slot) => slot.freeAtMs - handoverMs > nowMs);
  return {
    slots: now.map((slot) => slot.index),
    wakeAtMs: queued > now.length && later ? later.freeAtMs - handoverMs : null,
  };
}

/** The least time in which `count` permits can be used from an empty window: full windows after the first. */
export function theoreticalDrainMs(count: number, limit: Pick<WindowLimit, 'limit' | 'windowMs'>): number {
  if (count <= 0) return 0;
  return Math.floor((count - 1) / limit.limit) * limit.windowMs;
}

/**
 * When the request at `position` in the queue (0 = next) can expect its permit, assuming the slots
 * in freeAtMs free as planned and every granted slot is used at once: a status hint, not a promise.
 */
export function estimateGrantAt(
  freeAtMs: readonly number[],
  position: number,
  nowMs: number,
  limit: WindowLimit,
): number {
  const live = liveSlots(freeAtMs, nowMs).sort((a, b) => a - b);
  // Slots free now first, then the occupied ones in the order they free; the request at `position`
  // takes the slot `position % limit`, once per full round of the queue ahead of it.
  const slots = [...Array.from({ length: Math.max(0, limit.limit - live.length) }, () => nowMs), ...live];
  const round = Math.floor(position / limit.limit);
  return (slots[position % limit.limit] ?? nowMs) + round * (limit.windowMs + marginOf(limit));
}
