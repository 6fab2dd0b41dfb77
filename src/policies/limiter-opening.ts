// A project's limiter that is not running has nothing in its window: it completes only once its
// window is empty (src/workflows/rate-limiter.ts). So the first asks of a quiet project can be
// answered by whoever starts the limiter, from the same sliding-window arithmetic, and the limiter
// starts with those answers as its state: nobody waits for its first workflow task (up to a second on
// a busy server) before the first creates go out. Pure: the worker calls it, unit tests check it.
import type {
  LimiterRequestContext,
  PermitAdmission,
  PermitRequest,
  RateLimiterCarry,
  SparePermitsAsk,
} from '../shared/rate-limiter';
import {
  type WindowLimit,
  estimateGrantAt,
  grantedSlotFreeAt,
  permitUseByMs,
  rememberLimit,
  sparePermits,
} from './rate-window';

export interface LimiterOpening {
  /** The new limiter's state: what it granted and what it queued, in ask order. */
  state: RateLimiterCarry;
  /** One answer per ask, in ask order (a repeated ask gets its first one's answer). */
  answers: PermitAdmission[];
}

/**
 * Grants the first `limit` distinct asks at nowMs and queues the rest, FIFO, as the limiter would.
 */
export function openLimiter(
  asks: readonly PermitRequest[],
  nowMs: number,
  context: Pick<LimiterRequestContext, 'limit' | 'windowMs'>,
): LimiterOpening {
  const limit: WindowLimit = { limit: context.limit, windowMs: context.windowMs };
  const state: RateLimiterCarry = { grants: [], queue: [], seenLimits: rememberLimit([], limit, nowMs) };
  const answered = new Map<string, PermitAdmission>();
  const freeAtMs = grantedSlotFreeAt(nowMs, limit);
  /** The window's slots once it is full (the first ask queued): no grant is added after that. */
  let fullSlots: number[] | undefined;
  const answers = asks.map((ask) => {
    const key = JSON.stringify([ask.requesterWorkflowId, ask.requestKey]);
    const known = answered.get(key);
    if (known) return known;
    const request: PermitRequest = { requesterWorkflowId: ask.requesterWorkflowId, requestKey: ask.requestKey };
    let answer: PermitAdmission;
    if (state.grants.length < limit.limit) {
      state.grants.push({ ...request, atMs: nowMs, freeAtMs });
      answer = { requestKey: ask.requestKey, granted: true, useByMs: permitUseByMs(freeAtMs, limit) };
    } else {
      const position = state.queue.length;
      state.queue.push(request);
      fullSlots ??= state.grants.map((g) => g.freeAtMs);
      answer = {
        requestKey: ask.requestKey,
        granted: false,
        position,
        expectedAtMs: estimateGrantAt(fullSlots, position, nowMs, limit),
      };
    }
    answered.set(key, answer);
    return answer;
  });
  return { state, answers };
}

/**
 * Grants the spares an older release's worker process asked for (this release's workers ask for none;
 * the limiter keeps granting them during a rolling deploy, removable when no such release runs): none while
 * anything is queued, only what leaves half the window free (rate-window.ts sparePermits), each a
 * grant to the holder added to state.grants; a key granted before is answered with that grant again.
 */
export function grantSparePermits(
  state: RateLimiterCarry,
  spares: SparePermitsAsk | undefined,
  nowMs: number,
  limit: WindowLimit,
): PermitAdmission[] {
  if (!spares || typeof spares.holder !== 'string' || !Array.isArray(spares.keys) || state.queue.length > 0) return [];
  const keys = spares.keys.filter((k): k is string => typeof k === 'string');
  const count = sparePermits(
    state.grants.filter((g) => !g.handedOver).map((g) => g.freeAtMs),
    nowMs,
    limit,
    keys.length,
  );
  return keys.slice(0, count).map((requestKey): PermitAdmission => {
    let grant = state.grants.find((g) => g.requesterWorkflowId === spares.holder && g.requestKey === requestKey);
    if (!grant) {
      grant = {
        requesterWorkflowId: spares.holder,
        requestKey,
        atMs: nowMs,
        freeAtMs: grantedSlotFreeAt(nowMs, limit),
      };
      state.grants.push(grant);
    }
    return { requestKey, granted: true, useByMs: permitUseByMs(grant.freeAtMs, limit) };
  });
}
