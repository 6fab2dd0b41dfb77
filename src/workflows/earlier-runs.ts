// What runs started by earlier code did, for their replay on today's: each patch of the limiter, the
// agent job and the keeper's loop, with its old branch and when it may go. The core (rate-limiter.ts,
// permits.ts, agent-job.ts, bundle-keeper.ts) asks these and never which release it runs beside. A patch goes once no run without its
// marker is left: deprecatePatch, then the call (docs/operations.md, "Changing a workflow safely").
import { type ApplicationFailure, log, patched } from '@temporalio/workflow';
import type { WindowLimit } from '../policies/rate-window';
import { promptPreview } from '../policies/validation/agent';
import type { AgentJobInput } from '../shared/agent-job';
import { ApiFailure, nonRetryable } from '../shared/failures';
import type { LimiterRequestContext } from '../shared/rate-limiter';

// ---- agentRateLimiter: drop each when no limiter started before it runs ----

/** Continue as new past the run's own history budget (runs before it had none). */
export const limiterHasHistoryBudget = (): boolean => patched('limiter-short-history');
/** Continue as new once quiet past a fifth of the budget. */
export const limiterCompactsWhenQuiet = (): boolean => patched('limiter-compact-when-quiet');
/**
 * The run's payloads are plain (src/codec/public-payloads.ts). A run started before continues as new at
 * its first task on today's code, so the next run's history holds no payload encrypted with a key.
 */
export const limiterPayloadsPlain = (): boolean => patched('limiter-plain-payloads');
/** The start is checked and its window kept: an ask naming another is refused by the update's validator. */
export const limiterKeepsStartWindow = (): boolean => patched('limiter-fixed-window');

const atLeastOne = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 1;

/**
 * The window a run started before 'limiter-fixed-window' took from an ask naming another (null: it keeps
 * its own). Today's asks naming another never get here: the validator refused them (validators do not
 * run in replay).
 */
export function askersWindow(
  context: LimiterRequestContext | undefined,
  window: WindowLimit,
  projectId: string,
): WindowLimit | null {
  const { limit, windowMs } = context ?? {};
  if (!atLeastOne(limit) || !Number.isInteger(limit) || !atLeastOne(windowMs)) return null;
  if (limit === window.limit && windowMs === window.windowMs) return null;
  if (limiterKeepsStartWindow()) return null;
  log.info('agentRateLimiter: applying a new limit', { projectId, limit, windowMs });
  return { limit, windowMs, marginMs: window.marginMs };
}

// ---- bundleKeeper: drop each when no keeper started before it runs ----

/**
 * A wake that came while the keeper's step ran (a signal, or its export child's completion in one workflow
 * task with another result) counts: the keeper looks again instead of sleeping. Runs before took the wake
 * count only as they went to sleep, so such a wake was spent: one slept until its next due time (often the
 * refresh an hour on) with a finished export's bundle untaken and the publish that wanted it lost meanwhile.
 */
export const keeperCountsWakesDuringStep = (): boolean => patched('keeper-wakes-during-step');

// ---- agentJob: drop each when no agentJob started before it runs ----

/** How long before a slot handed on ahead of time the job's timer ends (the activity waits the rest). */
export const permitCallLeadMs = (): number => (patched('permit-call-lead-2.5s') ? 2_500 : 1_000);
/**
 * A permit granted ahead of time always waits on a timer, however near its slot (runs before skipped the
 * timer once the slot was near). The workflow's clock where the answer arrives is not always the one a
 * replay has: when the askPermit local activity outlives its workflow task (a timeout on a loaded
 * worker), the SDK gave the code the ask's completion time, a replay the next task's start, and a job
 * whose timer hung on that difference failed every task with a nondeterminism error.
 */
export const slotWaitAlwaysTimed = (): boolean => patched('permit-slot-timer');
/** Messages queued behind a running one go one at a time (runs before released them all at once). */
export const jobSendsMessagesInTurn = (): boolean => patched('agent-job-messages-in-turn');
/** A create or message whose outcome is unknown parks for an operator (runs before failed at once). */
export const jobParksUnknownOutcomes = (): boolean => patched('agent-job-parks-unknown-outcomes');

const OUTCOME_UNKNOWN = (message: string, cause: unknown) =>
  nonRetryable(ApiFailure.outcomeUnknown, message, { cause: cause as Error });

/** How a run that does not park failed a create whose outcome is unknown. */
export function unparkedCreateFailure(input: AgentJobInput, err: unknown, attemptedAt: string): ApplicationFailure {
  return OUTCOME_UNKNOWN(
    `the outcome of creating the agent job is unknown: the request may have reached the API. Project ` +
      `"${input.projectId}", request id ${input.requestId ? `"${input.requestId}"` : '(none)'}, attempted at ` +
      `${attemptedAt}, prompt starting "${promptPreview(input.prompt)}". It was not retried, to avoid a ` +
      `duplicate job and pull request: check the project's agent jobs and pull requests opened since then ` +
      `before starting it again`,
    err,
  );
}

/** How a run that does not park failed a follow-up message whose outcome is unknown. */
export function unparkedMessageFailure(
  input: AgentJobInput,
  jobId: string,
  prompt: string,
  attemptedAt: string,
  err: unknown,
): ApplicationFailure {
  return OUTCOME_UNKNOWN(
    `the outcome of the follow-up message to agent job ${jobId} is unknown (project "${input.projectId}", ` +
      `attempted at ${attemptedAt}, prompt starting "${promptPreview(prompt)}"). It was not retried, to avoid ` +
      `running the instruction twice: check the job and its pull request before sending it again`,
    err,
  );
}
