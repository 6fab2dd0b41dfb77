// Agent job activities: thin calls of the admin API (through callAdminApi, which maps errors to
// Temporal failures), each create and message under a permit of the project's rate limiter
// (./limiter-client.ts).
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { AgentJob } from '../api/types';
import { validateProjectId, validatePrompt } from '../policies/validation/agent';
import { WorkflowFailure } from '../shared/failures';
import { callAdminApi } from './api-call';
import type { ActivityDeps } from './deps';
import { LimiterClient, type LimiterAnswer } from './limiter-client';
import { type CheckpointChannel, withCheckpointChannel, withSendCheckpoints } from './send-checkpoint';

/**
 * The permit a create or message runs under. With it, the activity itself reports to the project's
 * limiter when the request was made (usedAtMs = this worker's clock once the call has returned or
 * failed: never earlier than the API saw it), sooner and tighter than the workflow could.
 */
export interface CallPermit {
  requestKey: string;
  /** Granted already (permitGrantedSignal reached the workflow); otherwise the activity asks the limiter first. */
  granted?: boolean;
  /** A permit handed on ahead of time: the call waits until then (epoch ms), before anything is recorded or sent. */
  notBeforeMs?: number;
  /** The call must be made by then (epoch ms); later, nothing is sent and the permit is asked for again. */
  useByMs?: number;
}

/**
 * A rate-limited call's outcome: the API's answer (and when it came, on this worker's clock), or not
 * admitted (nothing was sent): queued at the limiter (a grant signal follows), the limiter did not
 * answer in time (`unanswered` says why), or the permit's use-by time passed before the call could be
 * made (`expired`).
 */
export type Admitted<T> =
  | { admitted: true; value: T; answeredAtMs?: number }
  | { admitted: false; position?: number; expectedAtMs?: number; unanswered?: string; expired?: boolean };

export interface CreateAgentJobInput {
  projectId: string;
  prompt: string;
  permit?: CallPermit;
}

export interface GetAgentJobInput {
  projectId: string;
  jobId: string;
}

export interface SendAgentMessageInput extends GetAgentJobInput {
  prompt: string;
  permit?: CallPermit;
}

/** Same checks as the workflow, with this worker's maximum: a bad prompt never reaches the API. */
function assertValid(projectId: string, prompt: string | undefined, deps: ActivityDeps): void {
  const problems = [
    ...validateProjectId(projectId),
    ...(prompt === undefined ? [] : validatePrompt(prompt, { maxPromptLength: deps.maxPromptLength })),
  ];
  if (problems.length > 0) {
    throw ApplicationFailure.create({
      type: WorkflowFailure.invalidInput,
      message: `invalid agent input: ${problems.join('; ')}`,
      nonRetryable: true,
    });
  }
}

/**
 * Runs a rate-limited call under its permit: asks the project's limiter first unless the permit was
 * granted already, then, after the call, reports when it was made. The limiter ignores a repeated
 * requestKey, so a retried attempt never takes two permits.
 */
async function permitted<T>(
  limiter: LimiterClient,
  projectId: string,
  permit: CallPermit | undefined,
  call: (answered: () => void) => Promise<T>,
): Promise<Admitted<T>> {
  if (!permit) return { admitted: true, value: await call(() => undefined) };
  const requesterWorkflowId = Context.current().info.workflowExecution!.workflowId;
  let { useByMs } = permit;
  if (!permit.granted) {
    const answer = await limiter.ask(projectId, { requesterWorkflowId, requestKey: permit.requestKey });
    if (answer.kind === 'unanswered') return { admitted: false, unanswered: answer.reason };
    if (answer.kind === 'queued')
      return { admitted: false, position: answer.position, expectedAtMs: answer.expectedAtMs };
    ({ useByMs } = answer);
  }
  // Waiting here is safe: a worker that dies now has recorded and sent nothing (see send checkpoints).
  const waitMs = (permit.notBeforeMs ?? 0) - Date.now();
  if (waitMs > 0) await Context.current().sleep(waitMs);
  // Held up past its use-by time (an outage between grant and call): the limiter may have handed the
  // slot on, so this call would arrive in a full window. Nothing is sent; the workflow asks again.
  if (useByMs !== undefined && Date.now() > useByMs) return { admitted: false, expired: true };
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
    permit: CallPermit | undefined,
    operation: 'createAgentJob' | 'sendAgentMessage',
    call: (signal: AbortSignal) => Promise<AgentJob>,
  ): Promise<Admitted<AgentJob>> =>
    withCheckpointChannel(deps.temporal, (channel: CheckpointChannel<AgentJob>) =>
      permitted(limiter, projectId, permit, (answered) =>
        withSendCheckpoints(channel, operation, () => callAdminApi(operation, call), answered),
      ),
    );

  return {
    /**
     * Asks the project's limiter for a permit, without calling the API. Run as a local activity inside
     * the job's workflow task: a queued job costs no activity task and no second workflow task, which
     * is what keeps a burst of one project from holding other projects' jobs behind it on a server
     * without task-queue fairness.
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
    async createAgentJob({ projectId, prompt, permit }: CreateAgentJobInput): Promise<Admitted<AgentJob>> {
      assertValid(projectId, prompt, deps);
      return sendOnce(projectId, permit, 'createAgentJob', (signal) =>
        deps.api.createAgentJob(projectId, prompt, { signal }),
      );
    },

    /** GET /v2/agent/{projectId}/job/{id}: one status poll. */
    async getAgentJob({ projectId, jobId }: GetAgentJobInput): Promise<AgentJob> {
      deps.metrics.poll('agent');
      return callAdminApi('getAgentJob', (signal) => deps.api.getAgentJob(projectId, jobId, { signal }));
    },

    /** POST /v2/agent/{projectId}/job/{id}/message. Ambiguous failures arrive as OutcomeUnknown. */
    async sendAgentMessage({ projectId, jobId, prompt, permit }: SendAgentMessageInput): Promise<Admitted<AgentJob>> {
      assertValid(projectId, prompt, deps);
      return sendOnce(projectId, permit, 'sendAgentMessage', (signal) =>
        deps.api.sendAgentMessage(projectId, jobId, prompt, { signal }),
      );
    },
  };
}

export type AgentActivities = ReturnType<typeof createAgentActivities>;
