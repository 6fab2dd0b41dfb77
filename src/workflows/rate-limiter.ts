// agentRateLimiter: one workflow per project (id rateLimiterWorkflowId(projectId)) that admits agent
// creates and messages before they reach the API, for every worker process at once. Requests arrive
// as admitPermitsUpdate (update-with-start from the activity about to make the call, coalesced per
// worker process: a burst costs a few updates, not one per job), or in its start input: a worker
// that finds the project quiet starts it with its first asks already answered, as `carried` state
// (src/policies/limiter-opening.ts). What fits in the window is granted in the update's answer; the
// rest queues FIFO and is granted later by permitGrantedSignal to the requesting workflow. At most
// `limit` slots are occupied at once. A grant holds its slot until the requester reports
// (permitsUsedSignal) when it made the call, then for one window (plus a small margin) after that: the
// window follows the API's own, measured at arrival, however late a busy worker sends the request
// (src/policies/rate-window.ts). One limiter per project keeps projects independent: a burst in one
// project never delays another's permits. A worker process may also ask for spare permits with its
// requests (src/activities/spare-permits.ts): granted only while nothing is queued and half the
// window stays free, and freed at once when given back unused (permitsReleasedSignal).
//
// Fast under bursts: every grant that fits is sent in the same workflow task (the signals are issued
// together, not awaited one by one). State is plain JSON and carried across continue-as-new; an idle
// limiter (nothing queued, window empty) completes, and the next request starts a fresh one; a quiet
// one with a long history continues as new, so new worker processes replay little (QUIET_MS). A request
// may also come as requestPermitSignal (its grant then always comes by signal).
//
// Every update also says who asks (LimiterRequestContext): the asking worker's AGENT_RATE_LIMIT, so a
// changed limit reaches the running limiter (the strictest limit heard within its window applies:
// effectiveLimit), and the limiter task queue it serves, so a limiter found on another queue (started
// by an older fleet) continues as new onto it instead of waiting for a worker that is gone.
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  makeContinueAsNewFunc,
  metricMeter,
  patched,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import {
  type GrantPlan,
  type WindowLimit,
  defaultHandoverMs,
  effectiveLimit,
  estimateGrantAt,
  grantedSlotFreeAt,
  nextFreeAt,
  planGrants,
  planHandovers,
  rememberLimit,
  permitUseByMs,
  usedSlotFreeAt,
} from '../policies/rate-window';
import { grantSparePermits } from '../policies/limiter-opening';
import {
  type AgentRateLimiterInput,
  type LimiterRequestContext,
  type PermitAdmission,
  type PermitGrant,
  type PermitRequest,
  type RateLimiterCarry,
  permitGrantedSignal,
  type PermitUse,
  admitPermitsUpdate,
  permitUsedSignal,
  permitsReleasedSignal,
  permitsUsedSignal,
  rateLimiterStatusQuery,
  requestPermitSignal,
} from '../shared/rate-limiter';

/**
 * A limiter of a busy project runs for as long as its window keeps filling, and outlives worker
 * processes: after a deploy the new worker replays its whole history before it can answer an ask. At
 * ~1,400 events that took seconds on a busy worker and asks went unanswered for 10 s; so it continues
 * as new long before the server would suggest it (several thousand events). Runs that began before
 * this keep their old behaviour until the patch marker is recorded.
 */
const MAX_HISTORY_EVENTS = 500;
const SHORT_HISTORY_PATCH = 'limiter-short-history';
/**
 * A limiter also continues as new once it has been quiet this long with more than a fifth of that
 * many events, so the next burst meets a short history. New worker processes (a deploy, a restart, a
 * scaled-out fleet) replay every live limiter on one workflow thread before the first ask is answered:
 * ten limiters of 200-460 events held a burst's first asks 5-9 s on a loaded cluster, some past the
 * 10 s workflow task timeout.
 */
const QUIET_MS = 5_000;
const COMPACT_WHEN_QUIET_PATCH = 'limiter-compact-when-quiet';

const sameRequest = (a: PermitRequest, b: PermitRequest): boolean =>
  a.requesterWorkflowId === b.requesterWorkflowId && a.requestKey === b.requestKey;

/** Requests waiting for a permit, per project (a workflow metric, served by Core's exporter under this name). */
function permitsQueuedGauge() {
  return metricMeter.createGauge(
    'docs_admin_permits_queued',
    'int',
    'requests',
    'Agent permit requests queued at the project limiter.',
  );
}

// Longer than 80 lines on purpose: the limiter's state, the handlers registered over it and its loop
// in one closure. Moving them into a class, as agentJob and bundleKeeper did, is a change of
// deterministic code that the replay corpus cannot prove safe for this type yet: SDK 1.24's replayer
// cannot replay its runs started by update-with-start (test/replay/corpus.ts), the common case.
// eslint-disable-next-line max-lines-per-function -- see the comment above
export async function agentRateLimiter(input: AgentRateLimiterInput): Promise<void> {
  const permitsQueued = permitsQueuedGauge();
  const started = { limit: Math.max(1, Math.floor(input.limit)), windowMs: Math.max(1, input.windowMs) };
  const maxHistoryEvents = input.maxHistoryEvents ?? MAX_HISTORY_EVENTS;
  const historyIsLong = (): boolean => workflowInfo().historyLength > maxHistoryEvents && patched(SHORT_HISTORY_PATCH);
  const worthCompacting = (): boolean =>
    workflowInfo().historyLength > maxHistoryEvents / 5 && patched(COMPACT_WHEN_QUIET_PATCH);
  /** When a request, report or release last arrived (quiet since then). */
  let lastHeardAtMs = Date.now();
  const state: RateLimiterCarry = {
    grants: input.carried?.grants.map((g) => ({ ...g })) ?? [],
    queue: input.carried?.queue.map((r) => ({ ...r })) ?? [],
    seenLimits: input.carried?.seenLimits?.map((l) => ({ ...l })) ?? [],
  };
  /** The limit applied now: the strictest heard lately (recomputed as requests come and limits age out). */
  let limit: WindowLimit = { ...started, marginMs: input.marginMs };
  const applyLimit = (now: number): void => {
    const next = effectiveLimit(state.seenLimits ?? [], now, started);
    if (next.limit !== limit.limit || next.windowMs !== limit.windowMs) {
      log.info('agentRateLimiter: applying a new limit', {
        projectId: input.projectId,
        limit: next.limit,
        windowMs: next.windowMs,
      });
    }
    limit = { ...next, marginMs: input.marginMs };
  };
  applyLimit(Date.now());
  /** The limiter task queue the requesters serve, when this run is on another one: move there. */
  let moveTo: string | null = null;
  const heard = (context: LimiterRequestContext | undefined, now: number): void => {
    if (!context || typeof context !== 'object') return;
    const { limit: count, windowMs, taskQueue } = context;
    if (Number.isInteger(count) && count >= 1 && Number.isFinite(windowMs) && windowMs >= 1) {
      state.seenLimits = rememberLimit(state.seenLimits ?? [], { limit: count, windowMs }, now);
      applyLimit(now);
    }
    if (typeof taskQueue === 'string' && taskQueue !== '' && taskQueue !== workflowInfo().taskQueue) moveTo = taskQueue;
  };
  /** Requests already granted that asked again (a retried activity, or a requester that timed out waiting). */
  const regrants: PermitGrant[] = [];
  let granted = 0;
  const handoverMs = (): number => defaultHandoverMs(limit.windowMs);
  /** Grants whose slot is still counted (a handed-on one counts through its successor). */
  const counted = (): PermitGrant[] => state.grants.filter((g) => !g.handedOver);
  /** A report freed a slot (or brought one within hand-over reach) sooner than the planned wake-up. */
  let reported = false;
  let plannedWakeAtMs = Number.POSITIVE_INFINITY;
  const inFlight = new Set<Promise<void>>();

  /** Queues a new request; a repeated one stays where it is (queued, or granted: then it is answered again). */
  const enqueue = (request: PermitRequest): PermitGrant | null => {
    lastHeardAtMs = Date.now();
    if (!request || typeof request.requesterWorkflowId !== 'string' || typeof request.requestKey !== 'string') {
      log.warn('agentRateLimiter: ignoring a malformed permit request');
      return null;
    }
    if (state.queue.some((q) => sameRequest(q, request))) return null;
    const previous = state.grants.find((g) => sameRequest(g, request));
    if (previous) return previous;
    state.queue.push({ requesterWorkflowId: request.requesterWorkflowId, requestKey: request.requestKey });
    return null;
  };
  const enqueueSignalled = (request: PermitRequest): void => {
    const previous = enqueue(request);
    if (previous) regrants.push(previous);
  };
  setHandler(requestPermitSignal, enqueueSignalled);

  const recordUse = (use: PermitUse): void => {
    lastHeardAtMs = Date.now();
    const grant = use && state.grants.find((g) => sameRequest(g, use));
    if (!grant || typeof use.usedAtMs !== 'number' || !Number.isFinite(use.usedAtMs)) return;
    // Several reports (a retried call): the latest use decides.
    grant.usedAtMs = Math.max(grant.usedAtMs ?? 0, use.usedAtMs);
    grant.freeAtMs = usedSlotFreeAt(grant.usedAtMs, limit);
    if (grant.freeAtMs - handoverMs() < plannedWakeAtMs) reported = true;
  };
  setHandler(permitUsedSignal, recordUse);
  setHandler(permitsUsedSignal, (uses) => {
    if (Array.isArray(uses)) uses.forEach(recordUse);
  });

  setHandler(rateLimiterStatusQuery, () => {
    const now = Date.now();
    const live = counted().filter((g) => g.freeAtMs > now);
    return {
      projectId: input.projectId,
      taskQueue: workflowInfo().taskQueue,
      limit: limit.limit,
      windowMs: limit.windowMs,
      queued: state.queue.length,
      inWindow: live.length,
      granted,
      nextFreeAt:
        state.queue.length > 0
          ? new Date(
              nextFreeAt(
                live.map((g) => g.freeAtMs),
                now,
                limit,
              ),
            ).toISOString()
          : null,
    };
  });

  const notify = (grant: PermitGrant): void => {
    const sent = getExternalWorkflowHandle(grant.requesterWorkflowId)
      .signal(permitGrantedSignal, grant.requestKey, grant.notBeforeMs, permitUseByMs(grant.freeAtMs, limit))
      .catch((err: unknown) => {
        // The requester is gone (completed, terminated): its permit stays spent, which only errs on the safe side.
        log.warn('agentRateLimiter: could not deliver a permit', {
          requester: grant.requesterWorkflowId,
          error: String(err),
        });
      });
    inFlight.add(sent);
    void sent.finally(() => inFlight.delete(sent));
  };

  /**
   * Grants what fits now, FIFO. Grants to `answering` (the requests of an update being handled) are
   * returned by the update; every other grant is signalled to its requester.
   */
  const grantWhatFits = (now: number, answering: readonly PermitRequest[] = []): GrantPlan => {
    state.grants = state.grants.filter((g) => g.freeAtMs > now);
    const plan = planGrants(
      counted().map((g) => g.freeAtMs),
      state.queue.length,
      now,
      limit,
    );
    for (const request of state.queue.splice(0, plan.grantNow)) {
      const grant: PermitGrant = { ...request, atMs: now, freeAtMs: grantedSlotFreeAt(now, limit) };
      state.grants.push(grant);
      granted += 1;
      if (!answering.some((a) => sameRequest(a, request))) notify(grant);
    }
    return plan;
  };

  /**
   * Hands slots whose use was reported, and which free within reach, on to the queue ahead of time:
   * each successor is granted now, not to call before the slot frees. Returns when to look again.
   */
  const handOverAhead = (now: number): number | null => {
    const slots = counted();
    const plan = planHandovers(
      slots.map((g) => ({ freeAtMs: g.freeAtMs, reported: g.usedAtMs !== undefined })),
      state.queue.length,
      now,
      handoverMs(),
    );
    const requests = state.queue.splice(0, plan.slots.length);
    plan.slots.forEach((index, i) => {
      const previous = slots[index]!;
      previous.handedOver = true;
      const grant: PermitGrant = {
        ...requests[i]!,
        atMs: now,
        notBeforeMs: previous.freeAtMs,
        freeAtMs: grantedSlotFreeAt(previous.freeAtMs, limit),
      };
      state.grants.push(grant);
      granted += 1;
      notify(grant);
    });
    return plan.wakeAtMs;
  };
  setHandler(permitsReleasedSignal, (released) => {
    lastHeardAtMs = Date.now();
    if (!Array.isArray(released)) return;
    // Only a grant never used can be given back: a used one holds its slot until the API's window has passed.
    const kept = state.grants.filter(
      (g) => g.usedAtMs !== undefined || g.handedOver || !released.some((r) => r && sameRequest(g, r)),
    );
    if (kept.length < state.grants.length) reported = true;
    state.grants = kept;
  });

  // Registered after grantWhatFits exists: an update-with-start is handled as soon as this runs.
  setHandler(admitPermitsUpdate, (requests, context, spares) => {
    const now = Date.now();
    heard(context, now);
    const asked = Array.isArray(requests) ? requests : [];
    asked.forEach(enqueue);
    grantWhatFits(now, asked);
    const slots = counted().map((g) => g.freeAtMs);
    const answers = asked.map((r): PermitAdmission => {
      const grant = state.grants.find((g) => sameRequest(g, r));
      if (grant)
        return {
          requestKey: r.requestKey,
          granted: true,
          useByMs: grant.usedAtMs === undefined ? permitUseByMs(grant.freeAtMs, limit) : undefined,
        };
      const position = state.queue.findIndex((q) => sameRequest(q, r));
      return {
        requestKey: r?.requestKey,
        granted: false,
        position,
        expectedAtMs: estimateGrantAt(slots, Math.max(0, position), now, limit),
      };
    });
    const before = state.grants.length;
    const spareAnswers = grantSparePermits(state, spares, now, limit);
    granted += state.grants.length - before;
    return [...answers, ...spareAnswers];
  });

  for (;;) {
    const now = Date.now();
    reported = false;
    applyLimit(now);

    if (moveTo !== null) {
      // Started on a queue its requesters no longer serve (an older fleet's): carry on where they are.
      await Promise.all([...inFlight]);
      await condition(allHandlersFinished);
      log.info('agentRateLimiter: moving to the limiter task queue its requesters serve', {
        projectId: input.projectId,
        taskQueue: moveTo,
      });
      return makeContinueAsNewFunc<typeof agentRateLimiter>({ taskQueue: moveTo })({ ...input, carried: state });
    }

    for (const grant of regrants.splice(0)) notify(grant);

    const plan = grantWhatFits(now);
    // For the dashboard and alerts (dropped on replay; no command, so running histories are unaffected).
    permitsQueued.set(state.queue.length, { project: input.projectId });

    if (workflowInfo().continueAsNewSuggested || historyIsLong()) {
      await Promise.all([...inFlight]);
      await condition(allHandlersFinished);
      return continueAsNew<typeof agentRateLimiter>({ ...input, carried: state });
    }

    if (plan.wakeAtMs !== null) {
      const aheadAtMs = handOverAhead(now);
      if (state.queue.length > 0) {
        // Window full: sleep until the next slot frees or comes within hand-over reach, or a report or a
        // new request calls for a look sooner; re-requests of granted permits are answered meanwhile.
        const wakeAtMs = Math.min(plan.wakeAtMs, aheadAtMs ?? Number.POSITIVE_INFINITY);
        const queued = state.queue.length;
        plannedWakeAtMs = wakeAtMs;
        await condition(
          () => regrants.length > 0 || reported || moveTo !== null || state.queue.length > queued || historyIsLong(),
          Math.max(1, wakeAtMs - now),
        );
        plannedWakeAtMs = Number.POSITIVE_INFINITY;
        continue;
      }
    }

    // Nothing queued. Wait for work; once the window has emptied and nothing arrived, complete.
    const lastFreesAt = Math.max(now, ...counted().map((g) => g.freeAtMs));
    const idleMs = Math.max(1, lastFreesAt - now) + limit.windowMs;
    // Asks granted by the update handler and use reports grow the history without queueing anything:
    // without historyIsLong() a limiter that never fills its window never continued as new (1,200
    // events after a few benchmark runs of a 10,000/h project, replayed by every new worker). Once the
    // history is worth compacting, the wait ends when the limiter has been quiet for QUIET_MS.
    const compact = worthCompacting();
    const gotWork = await condition(
      () =>
        state.queue.length > 0 ||
        regrants.length > 0 ||
        moveTo !== null ||
        historyIsLong() ||
        (!compact && worthCompacting()),
      compact ? Math.min(idleMs, Math.max(1, lastHeardAtMs + QUIET_MS - now)) : idleMs,
    );
    const nothingPending = (): boolean => state.queue.length === 0 && regrants.length === 0 && moveTo === null;
    if (gotWork || !nothingPending()) continue;
    // Idle (the window has emptied): complete. Quiet with a history worth compacting: continue as new.
    const idle = state.grants.every((g) => g.freeAtMs <= Date.now());
    if (idle || (compact && Date.now() - lastHeardAtMs >= QUIET_MS)) {
      await Promise.all([...inFlight]);
      await condition(allHandlersFinished);
      if (nothingPending())
        return idle ? undefined : continueAsNew<typeof agentRateLimiter>({ ...input, carried: state });
    }
  }
}
