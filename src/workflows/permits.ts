// The agent job's side of the permit protocol with its project's agentRateLimiter. Every create and
// message runs under a permit: the activity asks the limiter itself and calls the API at once when a
// slot is free; otherwise nothing is sent and the job waits here for the grant signal. What it waits
// for is always in `waitingFor` (the status query and the Web UI's current details show it): its
// place in the limiter's queue, its slot's free time, or a limiter that does not answer.
import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  getExternalWorkflowHandle,
  log,
  patched,
  proxyLocalActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { Admitted, CallPermit } from '../activities/agent';
import type { LimiterAnswer } from '../activities/limiter-client';
import { permitGrantedSignal, permitUsedSignal, rateLimiterWorkflowId } from '../shared/rate-limiter';
import type { Settled } from './send-once';

/** Ask again when no grant arrives this long after it was expected (a limiter that ended or was reset). */
const RECHECK_AFTER_EXPECTED_MS = 30_000;
const RECHECK_MIN_MS = 60_000;
const RECHECK_MAX_MS = 10 * 60_000;
/** A limiter that did not answer is asked again after 5 s, doubling up to a minute. */
const UNANSWERED_RETRY = { initialMs: 5_000, maxMs: 60_000 };
/**
 * A permit handed on ahead of time waits in the workflow (a timer) until this long before its slot
 * frees, then in the activity: the worker holds an activity slot for a few seconds (it has 200, see
 * JOB_ACTIVITY_SLOTS), not for up to half a window. The lead covers a loaded server's timer, workflow
 * task and activity dispatch, so a window's creates go out when their slots free, not spread after:
 * with a 1 s lead the last window of a 300-job burst went out over 4 s instead of 2.5.
 */
const CALL_LEAD_MS = 2_500;
/** The lead before the change (kept for runs that started with it: the workflow timer is or isn't there). */
const CALL_LEAD_BEFORE_MS = 1_000;
const CALL_LEAD_PATCH = 'permit-call-lead-2.5s';

/**
 * The ask waits at most LIMITER_ANSWER_TIMEOUT_MS (10 s) for the limiter, and as long again to find out
 * why it did not answer; it is idempotent, so a failed attempt is retried a few times before the loop
 * below treats it as no answer.
 */
const askLimiter = proxyLocalActivities<Activities>({
  startToCloseTimeout: '45s',
  retry: { initialInterval: '1s', maximumAttempts: 3 },
});

type NotAdmitted = Extract<Admitted<unknown>, { admitted: false }>;
const notAdmitted = (answer: Exclude<LimiterAnswer, { kind: 'granted' }>): NotAdmitted =>
  answer.kind === 'queued'
    ? { admitted: false, position: answer.position, expectedAtMs: answer.expectedAtMs }
    : { admitted: false, unanswered: answer.reason };

const clamp = (value: number, min: number, max: number): number => Math.min(max, Math.max(min, value));
const finiteOrUndefined = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined;
const iso = (ms: number): string => new Date(ms).toISOString();

export class ProjectPermits {
  /** What a call is waiting for right now, or null. */
  waitingFor: string | null = null;
  /** Grants signalled for a request key: when the slot frees (handed on ahead of time) and the use-by time. */
  private readonly grants = new Map<string, { notBeforeMs?: number; useByMs?: number }>();
  private readonly reports = new Set<Promise<void>>();
  private readonly limiterId: string;

  /** Registers the grant signal's handler: construct it before the workflow's first await. */
  constructor(
    private readonly projectId: string,
    /** Called whenever waitingFor changes (the workflow republishes its details). */
    private readonly onChange: () => void,
  ) {
    this.limiterId = rateLimiterWorkflowId(projectId);
    setHandler(permitGrantedSignal, (key, notBeforeMs, useByMs) => {
      this.grants.set(key, { notBeforeMs: finiteOrUndefined(notBeforeMs), useByMs: finiteOrUndefined(useByMs) });
    });
  }

  /**
   * Runs `call` (one create or message activity) under a permit for requestKey and returns its value.
   * The activity reports the permit's use to the limiter; only when no activity finished (a timed-out
   * or cancelled attempt, whose report may be missing) does the workflow report, with its time now.
   */
  async run<T>(firstKey: string, call: (permit: CallPermit) => Promise<Settled<T>>): Promise<T> {
    // A permit that expired unused is asked for again under a new key: the limiter answers a known key
    // from its records, and that grant's slot stays counted until its lease ends.
    let renewals = 0;
    let requestKey = firstKey;
    let permit: CallPermit = { requestKey };
    let recheckMs = RECHECK_MIN_MS;
    for (let unanswered = 0; ;) {
      let refused: NotAdmitted | undefined;
      if (!permit.granted) {
        // Asked from inside this workflow task: granted at once, or queued without an activity task.
        const answer = await this.ask(requestKey);
        if (answer.kind === 'granted')
          permit = { requestKey, granted: true, useByMs: answer.useByMs, grantedAs: answer.grantedAs };
        else refused = notAdmitted(answer);
      }
      if (permit.granted) {
        await this.waitForSlot(permit);
        this.wait(null);
        let outcome: Settled<T>;
        try {
          outcome = await call(permit);
        } catch (err) {
          if (!(err instanceof ActivityFailure && err.cause instanceof ApplicationFailure)) this.reportUse(permit);
          throw err;
        }
        if (outcome.admitted) {
          if (outcome.fromCheckpoint) this.reportUse(permit);
          return outcome.value;
        }
        refused = outcome;
        if (outcome.expired) {
          log.warn('agentJob: a permit expired before its call could be made; asking for another', { requestKey });
          requestKey = `${firstKey}:renewed-${++renewals}`;
          permit = { requestKey };
          continue;
        }
        permit = { requestKey };
      }
      const outcome = refused!;
      const now = Date.now();
      if (outcome.unanswered) {
        const delay = Math.min(UNANSWERED_RETRY.maxMs, UNANSWERED_RETRY.initialMs * 2 ** unanswered++);
        this.wait(
          `the project's rate limiter, which did not answer: ${outcome.unanswered}; asking again at ${iso(now + delay)}`,
        );
        log.warn('agentJob: the rate limiter did not answer', {
          projectId: this.projectId,
          reason: outcome.unanswered,
        });
        await sleep(delay);
        continue;
      }
      unanswered = 0;
      const expected = outcome.expectedAtMs;
      this.wait(
        `a permit from ${this.limiterId}` +
          (outcome.position !== undefined ? `, ${outcome.position} request(s) ahead` : '') +
          (expected !== undefined ? `, expected around ${iso(expected)}` : ''),
      );
      if (expected !== undefined)
        recheckMs = clamp(expected - now + RECHECK_AFTER_EXPECTED_MS, RECHECK_MIN_MS, RECHECK_MAX_MS);
      if (await condition(() => this.grants.has(requestKey), recheckMs)) {
        permit = { requestKey, granted: true, ...this.grants.get(requestKey) };
        this.grants.delete(requestKey);
      } else {
        // The request is idempotent: the limiter answers a known key from its records.
        log.info('agentJob: no permit yet, asking the limiter again', { requestKey });
        recheckMs = Math.min(recheckMs * 2, RECHECK_MAX_MS);
      }
    }
  }

  /**
   * Tells the limiter when the permit was used, when no activity could: now, or its use-by time if that
   * is later (a timed-out attempt may still be running and call until then). Delivered before the run ends.
   */
  reportUse(permit: CallPermit): void {
    const usedAtMs = Math.max(Date.now(), permit.useByMs ?? 0);
    const report = getExternalWorkflowHandle(this.limiterId)
      .signal(permitUsedSignal, {
        ...(permit.grantedAs ?? { requesterWorkflowId: workflowInfo().workflowId, requestKey: permit.requestKey }),
        usedAtMs,
      })
      .catch((err: unknown) =>
        log.warn('agentJob: could not report a permit use to the limiter', { error: String(err) }),
      );
    this.reports.add(report);
    void report.finally(() => this.reports.delete(report));
  }

  /** Resolves once every report is delivered (await before completing or continuing as new). */
  async delivered(): Promise<void> {
    await Promise.all([...this.reports]);
  }

  /** The limiter's answer; an ask that kept failing (not for bad input) counts as no answer. */
  private async ask(requestKey: string): Promise<LimiterAnswer> {
    try {
      return await askLimiter.askPermit({ projectId: this.projectId, requestKey });
    } catch (err) {
      const cause = err instanceof ActivityFailure ? err.cause : undefined;
      if (!(err instanceof ActivityFailure) || (cause instanceof ApplicationFailure && cause.nonRetryable)) throw err;
      return { kind: 'unanswered', reason: `asking it failed: ${cause?.message ?? err.message}` };
    }
  }

  private async waitForSlot(permit: CallPermit): Promise<void> {
    if (permit.notBeforeMs === undefined) return;
    const lead = patched(CALL_LEAD_PATCH) ? CALL_LEAD_MS : CALL_LEAD_BEFORE_MS;
    const aheadMs = permit.notBeforeMs - lead - Date.now();
    if (aheadMs <= 0) return;
    this.wait(`its rate-limit slot, granted ahead of time, which frees at ${iso(permit.notBeforeMs)}`);
    await sleep(aheadMs);
  }

  private wait(what: string | null): void {
    if (what === this.waitingFor) return;
    this.waitingFor = what;
    this.onChange();
  }
}
