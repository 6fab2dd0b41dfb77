// The agent job's side of the permit protocol, its steps in the order a permit goes through them: ask,
// wait (askUntilGranted, untilSlot), call, report (docs/design.md, "Rate limits"; the limiter's side:
// src/workflows/rate-limiter.ts; the messages: src/shared/rate-limiter.ts). Who reports in each case:
// reportedBy. An expired permit goes back to the ask under a new key.
// What the job waits for is always in `waitingFor`, which the status query and the Web UI show.
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  getExternalWorkflowHandle,
  log,
  proxyLocalActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CallResult } from '../activities/agent';
import {
  type LimiterAnswer,
  type Permit,
  permitGrantedSignal,
  permitOf,
  permitUsedSignal,
  rateLimiterWorkflowId,
} from '../shared/rate-limiter';
import { deliverAll } from './deliver';
import { iso } from './details';
import { permitCallLeadMs, slotWaitAlwaysTimed } from './earlier-runs';

/** Ask again when no grant came this long after it was expected (a limiter that ended or was reset). */
const RECHECK_AFTER_EXPECTED_MS = 30_000;
const RECHECK_MIN_MS = 60_000;
const RECHECK_MAX_MS = 10 * 60_000;
/** A limiter that did not answer is asked again after 5 s, doubling up to a minute. */
const UNANSWERED_RETRY = { initialMs: 5_000, maxMs: 60_000 };

/**
 * One ask's longest path (limiter-client.ts), each step bounded by its LIMITER_ANSWER_TIMEOUT_MS
 * (10 s; the answer's own wait, design.md): the answer, the diagnosis of why none came, and when that
 * found an undecodable limiter and replaced it, the fresh limiter's answer and, if it too is silent, its
 * diagnosis; 4 x 10 s, plus 5 s for the replacement's terminate and the worker. Idempotent (the limiter
 * knows a repeated request by its key), so retried.
 */
const askLimiter = proxyLocalActivities<Activities>({
  startToCloseTimeout: '45s',
  retry: { initialInterval: '1s', maximumAttempts: 3 },
});

/** How long to wait before asking again; kept across the asks of one call. */
interface Backoff {
  /** Asks in a row the limiter did not answer. */
  unanswered: number;
  /** How long a queued request waits for its grant signal before asking again. */
  recheckMs: number;
}

const clamp = (value: number, min: number, max: number): number => Math.min(max, Math.max(min, value));

/**
 * Who reports a permit's use to the limiter (step 4), by how its call ended. The job's report says
 * "used at the use-by time, or now if later" (a lost attempt may call until then), which frees the slot
 * no sooner than its lease end: where nothing was sent, nobody reports and the lease simply expires.
 * The job still reports where something may have been sent: a reported slot's free time is exact, so the
 * limiter can hand it on ahead of time (rate-limiter.ts handOverAhead), and a call that reached the API
 * later than the use-by time keeps its slot held until a window after now.
 *
 *   how the call ended                                        sent?   who reports
 *   the activity returned the API's answer                    yes     the activity, as the call returned
 *   the activity failed in the call (an API failure: an       maybe   the activity, as the call failed
 *     ApplicationFailure of callAdminApi)
 *   the activity failed to record its `sending` checkpoint    no      the activity (its finally), and the
 *     (a client error, not an ApplicationFailure)                     job as below: the latest report counts;
 *                                                                     the slot frees as if it had called
 *   the activity refused its input (InvalidInput, before      no      nobody: the slot frees at its lease
 *     callWithPermit) or its permit was past its use-by               end, two windows after the grant
 *     time (`admitted: false`)
 *   an answer from a dead attempt's send checkpoint           yes     the job: that attempt never reported
 *   anything else: OutcomeUnknown (thrown by the workflow,    maybe   the job
 *     send-once.ts, not wrapped in an ActivityFailure), a
 *     timeout, a cancellation
 */
export function reportedBy(err: unknown): 'activity or nobody' | 'job' {
  // The activity's own ApplicationFailure: it either reported (it had called) or sent nothing.
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? 'activity or nobody' : 'job';
}

export class ProjectPermits {
  /** What a call is waiting for right now, or null. */
  waitingFor: string | null = null;
  /**
   * The request keys acquire() is asking for: a grant signal for any other key (one that lost the race to an ask's answer, or a late duplicate) is
   * dropped, so `signalled` holds nothing stale.
   */
  private readonly acquiring = new Set<string>();
  /** Permits granted by signal (step 2) for a key in `acquiring`, until acquire() takes it (or its answer wins). */
  private readonly signalled = new Map<string, Permit>();
  private readonly reports = new Set<Promise<void>>();
  private readonly limiterId: string;

  /** Registers the grant signal's handler: construct it before the workflow's first await. */
  constructor(
    private readonly projectId: string,
    /** Called whenever waitingFor changes (the workflow republishes its details). */
    private readonly onChange: () => void,
  ) {
    this.limiterId = rateLimiterWorkflowId(projectId);
    setHandler(permitGrantedSignal, (requestKey, notBeforeMs, useByMs) => {
      const granted = permitOf({ requestKey, notBeforeMs, useByMs });
      if (granted && this.acquiring.has(granted.requestKey)) this.signalled.set(granted.requestKey, granted);
    });
  }

  /** Runs `call` (one create or message activity) under a permit for `firstKey` and returns its value. */
  async run<T>(firstKey: string, call: (permit: Permit) => Promise<CallResult<T>>): Promise<T> {
    // This call's backoff, owned here and kept across its renewals; acquire() moves it as it asks.
    const backoff: Backoff = { unanswered: 0, recheckMs: RECHECK_MIN_MS };
    for (let renewals = 0; ; renewals++) {
      // A renewed permit needs a new key: the limiter answers a known one with its expired grant.
      const requestKey = renewals === 0 ? firstKey : `${firstKey}:renewed-${renewals}`;
      const granted = await this.acquire(requestKey, backoff);
      await this.untilSlot(granted);
      const outcome = await this.call(granted, call);
      if (outcome.admitted) return outcome.value;
      // Past its use-by time before the (first or next) attempt could call, e.g. a 429 retried after a
      // Retry-After that outlasted it (send-once.ts): ask a new permit. The old slot stays counted: until
      // one window after its last reported use (the 429's attempt reported), or to its lease end if no
      // attempt called.
      log.warn('agentJob: a permit expired before its call could be made; asking for another', { requestKey });
    }
  }

  /** Await before the run ends: a report still in flight then never arrives (see deliverAll). */
  async delivered(quiet: () => boolean = allHandlersFinished): Promise<void> {
    await deliverAll(this.reports, quiet);
  }

  /** Steps 1 and 2: asks until the limiter grants, waiting for its signal while queued. */
  private async acquire(requestKey: string, backoff: Backoff): Promise<Permit> {
    this.acquiring.add(requestKey);
    try {
      return await this.askUntilGranted(requestKey, backoff);
    } finally {
      // Taken, by signal or by answer: a signal that comes after is dropped (see `acquiring`).
      this.acquiring.delete(requestKey);
      this.signalled.delete(requestKey);
    }
  }

  /** acquire()'s loop; `backoff` is run()'s, updated in place for its next asks. */
  private async askUntilGranted(requestKey: string, backoff: Backoff): Promise<Permit> {
    for (;;) {
      const answer = await this.ask(requestKey);
      // The job's own key: an ask's result recorded by issue 56's release has none (drop it with those jobs).
      if (answer.kind === 'granted') return permitOf({ ...answer, requestKey })!;
      const now = Date.now();
      if (answer.kind === 'unanswered') {
        const delay = Math.min(UNANSWERED_RETRY.maxMs, UNANSWERED_RETRY.initialMs * 2 ** backoff.unanswered++);
        this.wait(
          `the project's rate limiter, which did not answer: ${answer.reason}; asking again at ${iso(now + delay)}`,
        );
        log.warn('agentJob: the rate limiter did not answer', { projectId: this.projectId, reason: answer.reason });
        await sleep(delay);
        continue;
      }
      backoff.unanswered = 0;
      const { position, expectedAtMs } = answer;
      this.wait(
        `a permit from ${this.limiterId}` +
          (position !== undefined ? `, ${position} request(s) ahead` : '') +
          (expectedAtMs !== undefined ? `, expected around ${iso(expectedAtMs)}` : ''),
      );
      if (expectedAtMs !== undefined)
        backoff.recheckMs = clamp(expectedAtMs - now + RECHECK_AFTER_EXPECTED_MS, RECHECK_MIN_MS, RECHECK_MAX_MS);
      if (await condition(() => this.signalled.has(requestKey), backoff.recheckMs))
        return this.signalled.get(requestKey)!;
      log.info('agentJob: no permit yet, asking the limiter again', { requestKey });
      backoff.recheckMs = Math.min(backoff.recheckMs * 2, RECHECK_MAX_MS);
    }
  }

  /** Step 1, from inside this workflow task (a local activity); an ask that kept failing counts as no answer. */
  private async ask(requestKey: string): Promise<LimiterAnswer> {
    try {
      return await askLimiter.askPermit({ projectId: this.projectId, requestKey });
    } catch (err) {
      const cause = err instanceof ActivityFailure ? err.cause : undefined;
      if (!(err instanceof ActivityFailure) || (cause instanceof ApplicationFailure && cause.nonRetryable)) throw err;
      return { kind: 'unanswered', reason: `asking it failed: ${cause?.message ?? err.message}` };
    }
  }

  /** Step 2, a permit handed on ahead of time: a timer until shortly before its slot frees (the activity waits the rest). */
  private async untilSlot(granted: Permit): Promise<void> {
    if (granted.notBeforeMs === undefined) return;
    // The lead (permitCallLeadMs) covers a loaded server's timer, task and dispatch.
    const aheadMs = granted.notBeforeMs - permitCallLeadMs() - Date.now();
    // Whether a timer is recorded must not hang on the clock: see slotWaitAlwaysTimed.
    if (!slotWaitAlwaysTimed() && aheadMs <= 0) return;
    this.wait(`its rate-limit slot, granted ahead of time, which frees at ${iso(granted.notBeforeMs)}`);
    await sleep(Math.max(1, aheadMs));
  }

  /** Steps 3 and 4: the call, and the use report by the job where reportedBy says so. */
  private async call<T>(granted: Permit, call: (permit: Permit) => Promise<CallResult<T>>): Promise<CallResult<T>> {
    this.wait(null);
    let result: CallResult<T>;
    try {
      result = await call(granted);
    } catch (err) {
      if (reportedBy(err) === 'job') this.report(granted);
      throw err;
    }
    if (result.admitted && result.fromCheckpoint) this.report(granted);
    return result;
  }

  /** Step 4: the use, now or at the use-by time if later (a lost attempt may call until then). */
  private report(granted: Permit): void {
    const usedAtMs = Math.max(Date.now(), granted.useByMs ?? 0);
    const report = getExternalWorkflowHandle(this.limiterId)
      .signal(permitUsedSignal, {
        requesterWorkflowId: workflowInfo().workflowId,
        requestKey: granted.requestKey,
        usedAtMs,
      })
      .catch((err: unknown) =>
        log.warn('agentJob: could not report a permit use to the limiter', { error: String(err) }),
      );
    this.reports.add(report);
    void report.finally(() => this.reports.delete(report));
  }

  private wait(what: string | null): void {
    if (what === this.waitingFor) return;
    this.waitingFor = what;
    this.onChange();
  }
}
