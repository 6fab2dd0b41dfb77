// agentRateLimiter: one workflow per project that admits agent creates and messages for every worker
// process. How it grants, queues, frees slots and keeps its window: docs/design.md, "Rate limits" (a
// slot's freeAtMs: src/policies/rate-window.ts; the job's side: src/workflows/permits.ts). The loop is
// step(): grant what fits, then end the run or wait. Running limiters replay on this code: keep its
// command sequence (test/integration/replay-corpus.test.ts).
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  metricMeter,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import {
  type GrantPlan,
  type WindowLimit,
  defaultHandoverMs,
  estimateGrantAt,
  grantedSlotFreeAt,
  nextFreeAt,
  planGrants,
  planHandovers,
  permitUseByMs,
  usedSlotFreeAt,
} from '../policies/rate-window';
import { askWindowProblem, limiterInputProblems } from '../policies/validation/rate-limiter';
import {
  type AgentRateLimiterInput,
  type LimiterRequestContext,
  type Permit,
  type PermitAdmission,
  type PermitGrant,
  type PermitRequest,
  type PermitUse,
  type RateLimiterCarry,
  type RateLimiterStatus,
  admitPermitsUpdate,
  grantSignalArgs,
  permitGrantedSignal,
  permitUsedSignal,
  permitsUsedSignal,
  rateLimiterCarry,
  rateLimiterStatusQuery,
} from '../shared/rate-limiter';
import { carriedStateProblems } from '../policies/validation/carry';
import { WorkflowFailure, invalidInput, nonRetryable } from '../shared/failures';
import { iso, markdownTable } from './details';
import { deliverAll } from './deliver';
import {
  askersWindow,
  limiterCompactsWhenQuiet,
  limiterHasHistoryBudget,
  limiterKeepsStartWindow,
  limiterPayloadsPlain,
} from './earlier-runs';

/** Continue as new past this many events when the start set no budget (workers set 2,000: limiter-client.ts). */
const MAX_HISTORY_EVENTS = 500;
/** And once quiet this long past a fifth of them (at most 100), so a burst meets a short history. */
const QUIET_MS = 5_000;
const QUIET_COMPACT_MAX_EVENTS = 100;

const sameRequest = (a: PermitRequest, b: PermitRequest): boolean =>
  a.requesterWorkflowId === b.requesterWorkflowId && a.requestKey === b.requestKey;

const isRequest = (r: PermitRequest | undefined): r is PermitRequest =>
  !!r && typeof r.requesterWorkflowId === 'string' && typeof r.requestKey === 'string';

/** What the run waits for, from which its details and its wake-ups follow: a slot of a full window, or requests. */
type Waiting =
  | {
      for: 'slot';
      /**
       * When the wait ends. Set by waitWhileFull, which ends early once it moves; moved only earlier, by
       * recordUse, when a reported use frees a slot (or brings it within hand-over reach) sooner.
       */
      wakeAtMs: number;
    }
  | { for: 'requests' };

/** How a run ends: completed (nothing queued and its window empty for a window), or continued as new with its state. */
type End = 'complete' | 'continue-as-new';

class Limiter {
  readonly state: RateLimiterCarry;
  /** The window applied (permits, length, margin): the start's, carried across continue-as-new. */
  window: WindowLimit;
  /** When a request or a use report last arrived. */
  lastHeardAtMs = Date.now();
  private waiting: Waiting | null = null;
  private grantsThisRun = 0;
  private readonly maxHistoryEvents: number;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly queuedGauge = metricMeter.createGauge(
    'docs_admin_permits_queued',
    'int',
    'requests',
    'Agent permit requests queued at the project limiter.',
  );

  constructor(readonly input: AgentRateLimiterInput) {
    this.maxHistoryEvents = input.maxHistoryEvents ?? MAX_HISTORY_EVENTS;
    this.state = {
      grants: input.carried?.grants.map((g) => ({ ...g })) ?? [],
      queue: input.carried?.queue.map((r) => ({ ...r })) ?? [],
    };
    this.window = {
      limit: Math.max(1, Math.floor(input.limit)),
      windowMs: Math.max(1, input.windowMs),
      marginMs: input.marginMs,
    };
  }

  get queued(): number {
    return this.state.queue.length;
  }

  historyIsLong(): boolean {
    return workflowInfo().historyLength > this.maxHistoryEvents && limiterHasHistoryBudget();
  }

  worthCompacting(): boolean {
    const compactPast = Math.min(this.maxHistoryEvents / 5, QUIET_COMPACT_MAX_EVENTS);
    return workflowInfo().historyLength > compactPast && limiterCompactsWhenQuiet();
  }

  /** Grants whose slot is still counted (one that handed its slot over counts through its successor's grant). */
  counted(): PermitGrant[] {
    return this.state.grants.filter((g) => !g.handedOver);
  }

  // --- message handlers ---

  /** Queues a new request; a repeated one stays where it is (queued, or granted: admit answers with that grant). */
  enqueue(request: PermitRequest): void {
    this.lastHeardAtMs = Date.now();
    if (!isRequest(request)) {
      log.warn('agentRateLimiter: ignoring a malformed permit request');
      return;
    }
    const known = (r: PermitRequest) => sameRequest(r, request);
    if (this.state.queue.some(known) || this.state.grants.some(known)) return;
    this.state.queue.push({ requesterWorkflowId: request.requesterWorkflowId, requestKey: request.requestKey });
  }

  recordUse(use: PermitUse): void {
    this.lastHeardAtMs = Date.now();
    const grant = use && this.state.grants.find((g) => sameRequest(g, use));
    if (!grant || typeof use.usedAtMs !== 'number' || !Number.isFinite(use.usedAtMs)) return;
    // Several reports (a retried call): the latest use decides.
    grant.usedAtMs = Math.max(grant.usedAtMs ?? 0, use.usedAtMs);
    grant.freeAtMs = usedSlotFreeAt(grant.usedAtMs, this.window);
    // A slot that frees (or comes within hand-over reach) sooner wakes a wait for one sooner.
    if (this.waiting?.for === 'slot')
      this.waiting.wakeAtMs = Math.min(this.waiting.wakeAtMs, grant.freeAtMs - defaultHandoverMs(this.window.windowMs));
  }

  /** The update's validator: an ask naming another window than this limiter's is refused, naming both. */
  checkAsk(context: LimiterRequestContext | undefined): void {
    const problem = askWindowProblem(context, this.window);
    if (problem)
      throw nonRetryable(
        WorkflowFailure.rateWindowMismatch,
        `${workflowInfo().workflowId} refused the ask: ${problem}; a changed AGENT_RATE_LIMIT applies once this limiter ends (docs/operations.md)`,
      );
  }

  /** The update: queue the asks, grant what fits, answer each (granted, or its place and expected time). */
  admit(requests: PermitRequest[], context?: LimiterRequestContext): PermitAdmission[] {
    const now = Date.now();
    this.window = askersWindow(context, this.window, this.input.projectId) ?? this.window;
    const asked = Array.isArray(requests) ? requests : [];
    asked.forEach((r) => this.enqueue(r));
    this.grantWhatFits(now, asked);
    const slots = this.counted().map((g) => g.freeAtMs);
    return asked.map((r): PermitAdmission => {
      const grant = this.state.grants.find((g) => sameRequest(g, r));
      if (grant) return { ...this.permit(grant), granted: true };
      const position = this.state.queue.findIndex((q) => sameRequest(q, r));
      const expectedAtMs = estimateGrantAt(slots, Math.max(0, position), now, this.window);
      return { requestKey: r?.requestKey, granted: false, position, expectedAtMs };
    });
  }

  status(): RateLimiterStatus {
    const now = Date.now();
    const live = this.counted().filter((g) => g.freeAtMs > now);
    const frees = live.map((g) => g.freeAtMs);
    return {
      projectId: this.input.projectId,
      taskQueue: workflowInfo().taskQueue,
      limit: this.window.limit,
      windowMs: this.window.windowMs,
      queued: this.queued,
      inWindow: live.length,
      granted: this.grantsThisRun,
      nextFreeAt: this.queued > 0 ? iso(nextFreeAt(frees, now, this.window)) : null,
      asOf: iso(now),
      windowEmptyAt: frees.length > 0 ? iso(Math.max(...frees)) : null,
    };
  }

  /** The Web UI's current details: the status, and what the limiter waits for. */
  private show(): void {
    const s = this.status();
    const waitingFor =
      this.waiting?.for === 'slot'
        ? 'a slot of the window to free for the queued requests'
        : 'requests; it completes a window after the window empties';
    setCurrentDetails(
      markdownTable(`Rate limiter · ${s.projectId}`, [
        ['limit', `${s.limit} per ${s.windowMs / 1000} s`],
        ['waiting for', waitingFor],
        ['queued', s.queued],
        [`in the window (${s.asOf})`, s.inWindow],
        ['next slot frees', s.nextFreeAt],
        ['window empty at', s.windowEmptyAt],
        ['granted by this run', s.granted],
      ]),
    );
  }

  // --- granting ---

  /** Grants what fits now, FIFO; grants to `answering` (an update's asks) go in its answer, others by signal. */
  grantWhatFits(now: number, answering: readonly PermitRequest[] = []): GrantPlan {
    this.state.grants = this.state.grants.filter((g) => g.freeAtMs > now);
    const frees = this.counted().map((g) => g.freeAtMs);
    const plan = planGrants(frees, this.queued, now, this.window);
    for (const request of this.state.queue.splice(0, plan.grantNow)) {
      const grant = this.grant(request, now, grantedSlotFreeAt(now, this.window));
      if (!answering.some((a) => sameRequest(a, request))) this.notify(grant);
    }
    this.queuedGauge.set(this.queued, { project: this.input.projectId });
    return plan;
  }

  /**
   * Hands reported slots that free within reach on to the queue ahead of time: each successor is
   * granted now, not to call before the slot frees. Returns when to look again.
   */
  handOverAhead(now: number): number | null {
    const slots = this.counted();
    const plan = planHandovers(
      slots.map((g) => ({ freeAtMs: g.freeAtMs, reported: g.usedAtMs !== undefined })),
      this.queued,
      now,
      defaultHandoverMs(this.window.windowMs),
    );
    const requests = this.state.queue.splice(0, plan.slots.length);
    requests.forEach((request, i) => {
      const previous = slots[plan.slots[i] ?? -1];
      if (!previous) return void this.state.queue.push(request); // never: planHandovers names valid slots
      previous.handedOver = true; // its slot is the successor's from now on
      const grant = this.grant(request, now, grantedSlotFreeAt(previous.freeAtMs, this.window));
      grant.notBeforeMs = previous.freeAtMs;
      this.notify(grant);
    });
    return plan.wakeAtMs;
  }

  // --- the run ---

  /**
   * One round: grants what fits, then ends the run or waits (while requests are queued in a full
   * window, for a slot; else for more requests). Returns how the run ends, or null to go round again.
   */
  async step(plainFromStart: boolean): Promise<End | null> {
    const now = Date.now();
    const plan = this.grantWhatFits(now);
    if (this.mustContinueAsNew(plainFromStart)) {
      await this.delivered();
      return 'continue-as-new';
    }
    if (plan.wakeAtMs !== null) {
      const aheadAtMs = this.handOverAhead(now) ?? Number.POSITIVE_INFINITY;
      if (this.queued > 0) {
        await this.waitWhileFull(now, Math.min(plan.wakeAtMs, aheadAtMs));
        return null;
      }
    }
    return this.waitForRequests(now);
  }

  /**
   * The run hands its state to a new one when the server suggests it; past its own history budget
   * (smaller: a worker that takes the limiter over replays its history before it answers); and at once
   * when its payloads were not plain from its start, so that the next run's history holds none encrypted.
   */
  private mustContinueAsNew(plainFromStart: boolean): boolean {
    const leaveEncrypted = !plainFromStart && limiterPayloadsPlain();
    return workflowInfo().continueAsNewSuggested || this.historyIsLong() || leaveEncrypted;
  }

  /** Window full: sleep until a slot frees or comes within hand-over reach, or a message calls for a look. */
  private async waitWhileFull(now: number, wakeAtMs: number): Promise<void> {
    const queued = this.queued;
    const waiting: Waiting = { for: 'slot', wakeAtMs };
    this.waiting = waiting;
    this.show();
    await condition(
      () => waiting.wakeAtMs < wakeAtMs || this.queued > queued || this.historyIsLong(),
      Math.max(1, wakeAtMs - now),
    );
    this.waiting = null;
  }

  /**
   * Nothing queued: wait for requests until one window after the window has emptied (then the run
   * completes; the timer's length is in running histories' commands: keep it) or, once
   * the history is worth compacting, until quiet for QUIET_MS (then it continues as new). Asks granted
   * at once and use reports grow the history too: hence the long-history check.
   */
  private async waitForRequests(now: number): Promise<End | null> {
    this.waiting = { for: 'requests' };
    this.show();
    const lastFreesAt = Math.max(now, ...this.counted().map((g) => g.freeAtMs));
    const idleMs = Math.max(1, lastFreesAt - now) + this.window.windowMs;
    const compact = this.worthCompacting();
    const quietMs = Math.max(1, this.lastHeardAtMs + QUIET_MS - now);
    const woken = await condition(
      () => this.queued > 0 || this.historyIsLong() || (!compact && this.worthCompacting()),
      compact ? Math.min(idleMs, quietMs) : idleMs,
    );
    this.waiting = null;
    const end = woken || this.queued > 0 ? null : this.idleEnd(compact);
    if (!end) return null;
    await this.delivered();
    return this.queued > 0 ? null : end;
  }

  /** After a wait for requests that timed out: complete once every slot has freed, compact once quiet. */
  private idleEnd(compact: boolean): End | null {
    if (this.state.grants.every((g) => g.freeAtMs <= Date.now())) return 'complete';
    return compact && Date.now() - this.lastHeardAtMs >= QUIET_MS ? 'continue-as-new' : null;
  }

  /**
   * Every grant signal delivered and every handler done, before the run ends: a signal still in flight
   * then is never delivered (its requester waited for its recheck, a minute, with its permit spent),
   * and an ask answered meanwhile may grant a queued request by signal.
   */
  delivered(): Promise<void> {
    return deliverAll(this.inFlight, allHandlersFinished);
  }

  // --- internals ---

  private grant(request: PermitRequest, now: number, freeAtMs: number): PermitGrant {
    const grant: PermitGrant = { ...request, atMs: now, freeAtMs };
    this.state.grants.push(grant);
    this.grantsThisRun += 1;
    return grant;
  }

  /**
   * A grant's permit, the same in its answer and its signal. useByMs only while the use is not reported:
   * freeAtMs is then the lease's end, which it is computed from (after a report, nothing is left to use).
   */
  private permit(grant: PermitGrant): Permit {
    return {
      requestKey: grant.requestKey,
      ...(grant.notBeforeMs !== undefined ? { notBeforeMs: grant.notBeforeMs } : {}),
      ...(grant.usedAtMs === undefined ? { useByMs: permitUseByMs(grant.freeAtMs, this.window) } : {}),
    };
  }

  private notify(grant: PermitGrant): void {
    const sent = getExternalWorkflowHandle(grant.requesterWorkflowId)
      .signal(permitGrantedSignal, ...grantSignalArgs(this.permit(grant)))
      .catch((err: unknown) => {
        // The requester is gone: its permit stays spent, which errs on the safe side.
        log.warn('agentRateLimiter: could not deliver a permit', {
          requester: grant.requesterWorkflowId,
          error: String(err),
        });
      });
    this.inFlight.add(sent);
    void sent.finally(() => this.inFlight.delete(sent));
  }
}

/** Registers the limiter's handlers; the update's is last, as an update-with-start is handled at once. */
function handle(limiter: Limiter): void {
  setHandler(permitUsedSignal, (use) => limiter.recordUse(use));
  setHandler(permitsUsedSignal, (uses) => {
    if (Array.isArray(uses)) uses.forEach((u) => limiter.recordUse(u));
  });
  setHandler(rateLimiterStatusQuery, () => limiter.status());
  setHandler(admitPermitsUpdate, (requests, context) => limiter.admit(requests, context), {
    validator: (_requests: PermitRequest[], context?: LimiterRequestContext) => limiter.checkAsk(context),
  });
}

/** A start with a carry not of this limiter's own past, or outside the bounds, fails before it grants anything. */
function refuseStart(problems: string[]): void {
  if (problems.length > 0) throw invalidInput('agentRateLimiter', problems);
}

export async function agentRateLimiter(input: AgentRateLimiterInput): Promise<void> {
  // Forged grants and queue would fill a project's window or signal grants to any workflow.
  refuseStart(carriedStateProblems(workflowInfo(), { carried: input?.carried }, rateLimiterCarry));
  if (limiterKeepsStartWindow()) refuseStart(limiterInputProblems(input));
  const limiter = new Limiter(input);
  handle(limiter);
  const plainFromStart = limiterPayloadsPlain();
  for (;;) {
    const end = await limiter.step(plainFromStart);
    if (end === 'complete') return;
    if (end === 'continue-as-new')
      return continueAsNew<typeof agentRateLimiter>({ ...input, ...limiter.window, carried: limiter.state });
  }
}
