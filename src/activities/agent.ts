// Agent job activities: thin calls of the admin API (through callAdminApi, which maps errors to
// Temporal failures), each create and message under a permit of the project's rate limiter: the job
// asks for it (askPermit, ./limiter-client.ts) and hands it to the call (src/workflows/permits.ts).
import { Context } from '@temporalio/activity';
import type { AgentJob } from '../api/types';
import { validateProjectId, validatePrompt } from '../policies/validation/agent';
import { invalidInput } from '../shared/failures';
import { callAdminApi } from './api-call';
import type { ActivityDeps } from './deps';
import { type LimiterAnswer, type Permit, permitOf } from '../shared/rate-limiter';
import { LimiterClient } from './limiter-client';
import { type CheckpointChannel, withCheckpointChannel, withSendCheckpoints } from './send-checkpoint';

/**
 * A create's or message's outcome: `admitted` (the permit was still valid, so the call was made) with
 * the API's answer and when it came on this worker's clock (the API's failures are thrown), or nothing
 * sent because the permit's use-by time passed first (the job asks for another). `fromCheckpoint` is set
 * by the workflow for an answer from a dead attempt's send checkpoint (src/workflows/send-once.ts),
 * which never reported its use.
 */
export type CallResult<T> =
  { admitted: true; value: T; answeredAtMs?: number; fromCheckpoint?: true } | { admitted: false; expired: true };

export interface CreateAgentJobInput {
  projectId: string;
  prompt: string;
  permit: Permit;
}

export interface GetAgentJobInput {
  projectId: string;
  jobId: string;
}

export interface SendAgentMessageInput extends GetAgentJobInput {
  prompt: string;
  permit: Permit;
}

/**
 * Same checks as the workflow, with this worker's maximum: a bad prompt never reaches the API. Made
 * before the permit is used: a refused input sends nothing and reports no use (permits.ts reportedBy).
 */
function assertValid(projectId: string, prompt: string | undefined, deps: ActivityDeps): void {
  const problems = [
    ...validateProjectId(projectId),
    ...(prompt === undefined ? [] : validatePrompt(prompt, { maxPromptLength: deps.maxPromptLength })),
  ];
  if (problems.length > 0) throw invalidInput('agent', problems);
}

/** The call's permit as received (untrusted): a permit, else InvalidInput before anything is sent. */
function permitInput(permit: unknown): Permit {
  const decoded = typeof permit === 'object' && permit !== null ? permitOf(permit) : null;
  if (decoded) return decoded;
  throw invalidInput('agent', ["a create or message needs a permit of the project's rate limiter"]);
}

/**
 * Step 3 of a permit (src/workflows/permits.ts): the call under a permit the limiter granted. Waits
 * for a slot handed on ahead of time, calls only before the use-by time, and reports the use to the
 * limiter as soon as the call returned or failed (usedAtMs: this worker's clock then, never earlier
 * than the API saw it), sooner and tighter than the workflow could.
 */
async function callWithPermit<T>(
  limiter: LimiterClient,
  projectId: string,
  permit: Permit,
  call: (answered: () => void) => Promise<T>,
): Promise<CallResult<T>> {
  const requesterWorkflowId = Context.current().info.workflowExecution!.workflowId;
  // Waiting here is safe: a worker that dies now has recorded and sent nothing (see send checkpoints).
  const waitMs = (permit.notBeforeMs ?? 0) - Date.now();
  if (waitMs > 0) await Context.current().sleep(waitMs);
  // Held up past its use-by time (an outage between grant and call): the limiter may have handed the
  // slot on, so this call would arrive in a full window. Nothing is sent; the workflow asks again.
  if (permit.useByMs !== undefined && Date.now() > permit.useByMs) return { admitted: false, expired: true };
  // When the request returned (or failed): the latest moment the API can have counted it, and the
  // earliest this worker can vouch for. Taken before the answer is checkpointed, so that write's
  // round trip does not push the project's next window later.
  let answeredAtMs: number | undefined;
  try {
    const value = await call(() => (answeredAtMs = Date.now()));
    return { admitted: true, value, answeredAtMs };
  } finally {
    // Not awaited: the job's polling need not wait for the limiter.
    limiter.reportUse(projectId, {
      requesterWorkflowId,
      requestKey: permit.requestKey,
      usedAtMs: answeredAtMs ?? Date.now(),
    });
  }
}

export function createAgentActivities(deps: ActivityDeps) {
  const limiter = new LimiterClient({
    temporal: deps.temporal,
    taskQueue: deps.limiterTaskQueue,
    rateLimit: deps.agentRateLimit,
    answerTimeoutMs: deps.limiterAnswerTimeoutMs,
  });
  /**
   * A non-idempotent call (create, message) under its permit, with send checkpoints; the checkpoint
   * channel is open for the whole attempt, so its waits for the permit are kept alive too.
   */
  const sendOnce = (
    projectId: string,
    permit: Permit,
    operation: 'createAgentJob' | 'sendAgentMessage',
    call: (signal: AbortSignal) => Promise<AgentJob>,
  ): Promise<CallResult<AgentJob>> =>
    withCheckpointChannel(deps.temporal, (channel: CheckpointChannel<AgentJob>) =>
      callWithPermit(limiter, projectId, permit, (answered) =>
        withSendCheckpoints(channel, operation, () => callAdminApi(operation, call), answered),
      ),
    );

  return {
    /**
     * Step 1 of a permit (src/workflows/permits.ts): asks the project's limiter, as a local activity inside
     * the job's workflow task (why: docs/design.md, "Rate limits", "Asked from a local activity, by
     * update-with-start"), which matters on a server without task-queue fairness.
     */
    async askPermit({ projectId, requestKey }: { projectId: string; requestKey: string }): Promise<LimiterAnswer> {
      assertValid(projectId, undefined, deps);
      return limiter.ask(projectId, {
        requesterWorkflowId: Context.current().info.workflowExecution!.workflowId,
        requestKey,
      });
    },

    /**
     * POST /v2/agent/{projectId}/job. Ambiguous failures arrive as OutcomeUnknown (non-retryable); a
     * worker that dies mid-attempt leaves send checkpoints for the workflow (./send-checkpoint.ts).
     */
    async createAgentJob({ projectId, prompt, permit }: CreateAgentJobInput): Promise<CallResult<AgentJob>> {
      assertValid(projectId, prompt, deps);
      return sendOnce(projectId, permitInput(permit), 'createAgentJob', (signal) =>
        deps.api.createAgentJob(projectId, prompt, { signal }),
      );
    },

    /** GET /v2/agent/{projectId}/job/{id}: one status poll. */
    async getAgentJob({ projectId, jobId }: GetAgentJobInput): Promise<AgentJob> {
      deps.metrics.poll('agent');
      return callAdminApi('getAgentJob', (signal) => deps.api.getAgentJob(projectId, jobId, { signal }));
    },

    /** POST /v2/agent/{projectId}/job/{id}/message. Ambiguous failures arrive as OutcomeUnknown. */
    async sendAgentMessage({ projectId, jobId, prompt, permit }: SendAgentMessageInput): Promise<CallResult<AgentJob>> {
      assertValid(projectId, prompt, deps);
      return sendOnce(projectId, permitInput(permit), 'sendAgentMessage', (signal) =>
        deps.api.sendAgentMessage(projectId, jobId, prompt, { signal }),
      );
    },
  };
}
