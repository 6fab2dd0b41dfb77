// Agent job activities: thin calls of the admin API (through callAdminApi, which maps errors to
// Temporal failures) and the permit request to the per-project rate limiter workflow.
import { Context, log } from '@temporalio/activity';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { AgentJob } from '../api/types';
import {
  type AgentRateLimiterInput,
  type PermitAdmission,
  type PermitRequest,
  type PermitUse as LimiterPermitUse,
  WorkflowType,
  admitPermitsUpdate,
  permitsUsedSignal,
  SearchAttr,
  projectFairnessKey,
  rateLimiterWorkflowId,
} from '../shared';
import { validateProjectId, validatePrompt } from '../validation/agent';
import { callAdminApi } from './api-call';
import type { ActivityDeps } from './deps';
import { KeyedBatcher } from './keyed-batcher';
import { withSendCheckpoints } from './send-checkpoint';

/**
 * The permit a create or message runs under. With it, the activity itself reports to the project's
 * limiter when the request was made (permitUsedSignal, usedAtMs = this worker's clock once the call
 * has returned or failed: never earlier than the API saw it), sooner and tighter than the workflow could.
 */
export interface PermitUse {
  requestKey: string;
  /** Granted already (permitGrantedSignal reached the workflow); otherwise the activity asks the limiter first. */
  granted?: boolean;
  /** A permit handed on ahead of time: the call waits until then (epoch ms), before anything is recorded or sent. */
  notBeforeMs?: number;
}

/**
 * A rate-limited call's outcome: the API's answer, or "queued": no permit is free now, nothing was
 * sent, and the limiter will grant one by permitGrantedSignal to the workflow.
 */
export type Admitted<T> = { admitted: true; value: T } | { admitted: false };

export interface CreateAgentJobInput {
  projectId: string;
  prompt: string;
  permit?: PermitUse;
}

export interface GetAgentJobInput {
  projectId: string;
  jobId: string;
}

export interface SendAgentMessageInput extends GetAgentJobInput {
  prompt: string;
  permit?: PermitUse;
}

/** Task priority of the limiter workflows (1 = highest; the server's default for everything else is 3). */
export const LIMITER_PRIORITY_KEY = 1;

/** Same checks as the workflow, with this worker's maximum: a bad prompt never reaches the API. */
function assertValid(projectId: string, prompt: string | undefined, deps: ActivityDeps): void {
  const problems = [
    ...validateProjectId(projectId),
    ...(prompt === undefined ? [] : validatePrompt(prompt, { maxPromptLength: deps.maxPromptLength })),
  ];
  if (problems.length > 0) {
    throw ApplicationFailure.create({ type: 'InvalidInput', message: `invalid agent input: ${problems.join('; ')}`, nonRetryable: true });
  }
}

interface QueuedPermitRequest {
  request: PermitRequest;
  projectId: string;
  taskQueue: string;
}

export function createAgentActivities(deps: ActivityDeps) {
  const limiterInputOf = (projectId: string): AgentRateLimiterInput => ({
    projectId,
    limit: deps.agentRateLimit.limit,
    windowMs: deps.agentRateLimit.windowMs,
  });

  // A burst's permit requests (and use reports) for one project travel together: a few calls, not one per job.
  const admissions = new KeyedBatcher<QueuedPermitRequest, PermitAdmission>((_key, queued) => {
    const { projectId, taskQueue } = queued[0]!;
    const limiterInput = limiterInputOf(projectId);
    return deps.temporal.workflow.executeUpdateWithStart(admitPermitsUpdate, {
      args: [queued.map((q) => q.request)],
      startWorkflowOperation: new WithStartWorkflowOperation(WorkflowType.agentRateLimiter, {
        workflowId: rateLimiterWorkflowId(projectId),
        workflowIdConflictPolicy: 'USE_EXISTING',
        // The first request starts the limiter, on the limiter task queue, with this worker's AGENT_RATE_LIMIT.
        taskQueue,
        args: [limiterInput],
        staticSummary: `Agent rate limiter for project ${projectId} (${limiterInput.limit} per ${limiterInput.windowMs} ms)`,
        // Every permit of the project passes through this one workflow: its tasks go first.
        priority: { priorityKey: LIMITER_PRIORITY_KEY, fairnessKey: projectFairnessKey(projectId) },
        // Filterable with its project's jobs in the Web UI (DocsProjectId = "...").
        typedSearchAttributes: [{ key: SearchAttr.projectId, value: projectId }],
      }),
    });
  });
  const permitUses = new KeyedBatcher<LimiterPermitUse>((projectId, uses) =>
    deps.temporal.workflow.getHandle(rateLimiterWorkflowId(projectId)).signal(permitsUsedSignal, uses),
  );

  /**
   * Runs a rate-limited call under its permit: asks the project's limiter first unless the permit was
   * granted already, then, after the call, reports when it was made (best effort, in the background:
   * an unreported permit holds its slot for its lease). The limiter ignores a repeated requestKey, so a retried attempt
   * never takes two permits.
   */
  async function permitted<T>(projectId: string, permit: PermitUse | undefined, call: () => Promise<T>): Promise<Admitted<T>> {
    if (!permit) return { admitted: true, value: await call() };
    const { workflowExecution, taskQueue: ownTaskQueue } = Context.current().info;
    const requesterWorkflowId = workflowExecution!.workflowId;
    const taskQueue = deps.limiterTaskQueue ?? ownTaskQueue;
    if (!permit.granted) {
      const request = { requesterWorkflowId, requestKey: permit.requestKey };
      const answer = await admissions.add(`${taskQueue}\n${projectId}`, { request, projectId, taskQueue });
      if (!answer?.granted) return { admitted: false };
    }
    // Waiting here is safe: a worker that dies now has recorded and sent nothing (see send checkpoints).
    const waitMs = (permit.notBeforeMs ?? 0) - Date.now();
    if (waitMs > 0) await Context.current().sleep(waitMs);
    try {
      return { admitted: true, value: await call() };
    } finally {
      // Not awaited: the job's polling need not wait for the limiter. Lost with a dying worker, the
      // report only leaves the slot held until its lease ends (the safe side).
      void permitUses
        .add(projectId, { requesterWorkflowId, requestKey: permit.requestKey, usedAtMs: Date.now() })
        .catch((err: unknown) => log.warn('could not report a permit use to the limiter', { projectId, error: String(err) }));
    }
  }

  return {
    /**
     * POST /v2/agent/{projectId}/job. Ambiguous failures arrive as OutcomeUnknown (non-retryable); a
     * worker that dies mid-attempt leaves send checkpoints for the workflow (./send-checkpoint.ts).
     */
    async createAgentJob({ projectId, prompt, permit }: CreateAgentJobInput): Promise<Admitted<AgentJob>> {
      assertValid(projectId, prompt, deps);
      return permitted(projectId, permit, () =>
        withSendCheckpoints(deps.temporal, 'createAgentJob', () =>
          callAdminApi('createAgentJob', (signal) => deps.api.createAgentJob(projectId, prompt, { signal })),
        ),
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
      return permitted(projectId, permit, () =>
        withSendCheckpoints(deps.temporal, 'sendAgentMessage', () =>
          callAdminApi('sendAgentMessage', (signal) => deps.api.sendAgentMessage(projectId, jobId, prompt, { signal })),
        ),
      );
    },
  };
}

export type AgentActivities = ReturnType<typeof createAgentActivities>;
