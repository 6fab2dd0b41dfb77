// The agent job's side of the permit protocol: every create and message runs under a permit from the
// project's agentRateLimiter (ask, wait for the grant signal when queued, call, report). What a call
// waits for is always in `waitingFor`, which the status query and the Web UI show.
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
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
import { settleAll } from './settle';

/** Ask again when no grant came this long after it was expected (a limiter that ended or was reset). */
const RECHECK_AFTER_EXPECTED_MS = 30_000;
const RECHECK_MIN_MS = 60_000;
const RECHECK_MAX_MS = 10 * 60_000;
/** A limiter that did not answer is asked again after 5 s, doubling up to a minute. */
const UNANSWERED_RETRY = { initialMs: 5_000, maxMs: 60_000 };
/**
 * A permit handed on ahead of time waits on a timer until this long before its slot frees, then in the
 * activity: the lead covers a loaded server's timer, task and dispatch. Runs from before the patch: 1 s.
 */
const CALL_LEAD_MS = 2_500;
const CALL_LEAD_BEFORE_MS = 1_000;
const CALL_LEAD_PATCH = 'permit-call-lead-2.5s';

/** Up to 10 s for the answer, as long to find out why none came, and 10 s for a replaced limiter's; idempotent, retried. */
const askLimiter = proxyLocalActivities<Activities>({
  startToCloseTimeout: '45s',
  retry: { initialInterval: '1s', maximumAttempts: 3 },
});

type NotAdmitted = Extract<Admitted<unknown>, { admitted: false }>;
const notAdmitted = (answer: Exclude<LimiterAnswer, { kind: 'granted' }>): NotAdmitted =>
  answer.kind === 'queued'
    ? { admitted: false, position: answer.position, expectedAtMs: answer.expectedAtMs }
    : { admitted: false, unanswered: answer.reason };

/** One permitted call's progress across asks: its key (renewed when a permit expired) and backoffs. */
interface Attempt {
  readonly firstKey: string;
  requestKey: string;
  renewals: number;
  /** Asks in a row the limiter did not answer. */
  unanswered: number;
  recheckMs: number;
}

/** Where a permitted call stands: ask the limiter, wait for a grant, call with a permit, or done. */
type Step<T> =
  | { kind: 'ask' }
  | { kind: 'refused'; refusal: NotAdmitted }
  | { kind: 'granted'; permit: CallPermit }
  | { kind: 'done'; value: T };

const clamp = (value: number, min: number, max: number): number => Math.min(max, Math.max(min, value));
const finiteOrUndefined = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined;
const iso = (ms: number): string => new Date(ms).toISOString();

export class ProjectPermits {
  /** What a call is waiting for right now, or null. */
  waitingFor: string | null = null;
  /** Grants signalled per request key: not before (handed on ahead of time) and use-by times. */
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

  /** Runs `call` (one create or message activity) under a permit for firstKey and returns its value. */
  async run<T>(firstKey: string, call: (permit: CallPermit) => Promise<Settled<T>>): Promise<T> {
    const attempt: Attempt = { firstKey, requestKey: firstKey, renewals: 0, unanswered: 0, recheckMs: RECHECK_MIN_MS };
    let step: Step<T> = { kind: 'ask' };
    for (;;) {
      if (step.kind === 'done') return step.value;
      if (step.kind === 'ask') step = await this.ask(attempt.requestKey);
      else if (step.kind === 'granted') step = await this.call(attempt, step.permit, call);
      else step = await this.waitForGrant(attempt, step.refusal);
    }
  }
  /** Reports the use when no activity could: now, or the use-by time if later (a lost attempt may call until then). */
  reportUse(permit: CallPermit): void {
    const usedAtMs = Math.max(Date.now(), permit.useByMs ?? 0);
    const report = getExternalWorkflowHandle(this.limiterId)
      .signal(permitUsedSignal, {
        requesterWorkflowId: workflowInfo().workflowId,
        requestKey: permit.requestKey,
        usedAtMs,
      })
      .catch((err: unknown) =>
        log.warn('agentJob: could not report a permit use to the limiter', { error: String(err) }),
      );
    this.reports.add(report);
    void report.finally(() => this.reports.delete(report));
  }

  /** Await before the run ends: a report still in flight then never arrives (see settleAll). */
  async delivered(quiet: () => boolean = allHandlersFinished): Promise<void> {
    await settleAll(this.reports, quiet);
  }

  /** Asks from inside this workflow task (a local activity); an ask that kept failing counts as no answer. */
  private async ask<T>(requestKey: string): Promise<Step<T>> {
    let answer: LimiterAnswer;
    try {
      answer = await askLimiter.askPermit({ projectId: this.projectId, requestKey });
    } catch (err) {
      const cause = err instanceof ActivityFailure ? err.cause : undefined;
      if (!(err instanceof ActivityFailure) || (cause instanceof ApplicationFailure && cause.nonRetryable)) throw err;
      answer = { kind: 'unanswered', reason: `asking it failed: ${cause?.message ?? err.message}` };
    }
    if (answer.kind !== 'granted') return { kind: 'refused', refusal: notAdmitted(answer) };
    const permit = { requestKey, granted: true, useByMs: answer.useByMs };
    return { kind: 'granted', permit };
  }

  /** Calls once the permit's slot is near; a permit that expired first is asked for again under a new key. */
  private async call<T>(
    attempt: Attempt,
    permit: CallPermit,
    call: (permit: CallPermit) => Promise<Settled<T>>,
  ): Promise<Step<T>> {
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
      return { kind: 'done', value: outcome.value };
    }
    if (!outcome.expired) return { kind: 'refused', refusal: outcome };
    // A new key: the limiter would answer the old one with its expired grant.
    log.warn('agentJob: a permit expired before its call could be made; asking for another', {
      requestKey: attempt.requestKey,
    });
    attempt.requestKey = `${attempt.firstKey}:renewed-${++attempt.renewals}`;
    return { kind: 'ask' };
  }

  /** Not admitted: ask a silent limiter again after a backoff; else wait for the grant, asking again when late. */
  private async waitForGrant<T>(attempt: Attempt, refusal: NotAdmitted): Promise<Step<T>> {
    const now = Date.now();
    if (refusal.unanswered) {
      const delay = Math.min(UNANSWERED_RETRY.maxMs, UNANSWERED_RETRY.initialMs * 2 ** attempt.unanswered++);
      this.wait(
        `the project's rate limiter, which did not answer: ${refusal.unanswered}; asking again at ${iso(now + delay)}`,
      );
      log.warn('agentJob: the rate limiter did not answer', { projectId: this.projectId, reason: refusal.unanswered });
      await sleep(delay);
      return { kind: 'ask' };
    }
    attempt.unanswered = 0;
    const { requestKey } = attempt;
    const expected = refusal.expectedAtMs;
    this.wait(
      `a permit from ${this.limiterId}` +
        (refusal.position !== undefined ? `, ${refusal.position} request(s) ahead` : '') +
        (expected !== undefined ? `, expected around ${iso(expected)}` : ''),
    );
    if (expected !== undefined)
      attempt.recheckMs = clamp(expected - now + RECHECK_AFTER_EXPECTED_MS, RECHECK_MIN_MS, RECHECK_MAX_MS);
    if (await condition(() => this.grants.has(requestKey), attempt.recheckMs)) {
      const permit = { requestKey, granted: true, ...this.grants.get(requestKey) };
      this.grants.delete(requestKey);
      return { kind: 'granted', permit };
    }
    log.info('agentJob: no permit yet, asking the limiter again', { requestKey });
    attempt.recheckMs = Math.min(attempt.recheckMs * 2, RECHECK_MAX_MS);
    return { kind: 'ask' };
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
