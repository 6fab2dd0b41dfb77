// Agent job activities: thin calls of the admin API (through callAdminApi, which maps errors to
// Temporal failures) and the permit request to the per-project rate limiter workflow.
import { Context, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { AgentJob } from '../api/types';
import {
  type AgentRateLimiterInput,
  type PermitRequest,
  type PermitUse as LimiterPermitUse,
  WorkflowType,
  permitsUsedSignal,
  SearchAttr,
  projectFairnessKey,
  rateLimiterWorkflowId,
  requestPermitsSignal,
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
}

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

export interface RequestAgentPermitInput extends PermitRequest {
  projectId: string;
}

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

  // One batcher per signal: a burst's requests (and use reports) for one project travel together.
  const permitRequests = new KeyedBatcher<QueuedPermitRequest>(async (_key, queued) => {
    const { projectId, taskQueue } = queued[0]!;
    const limiterInput = limiterInputOf(projectId);
    await deps.temporal.workflow.signalWithStart(WorkflowType.agentRateLimiter, {
      workflowId: rateLimiterWorkflowId(projectId),
      taskQueue,
      args: [limiterInput],
      signal: requestPermitsSignal,
      signalArgs: [queued.map((q) => q.request)],
      staticSummary: `Agent rate limiter for project ${projectId} (${limiterInput.limit} per ${limiterInput.windowMs} ms)`,
      // Every permit of the project passes through this one workflow: its tasks go first.
      priority: { priorityKey: LIMITER_PRIORITY_KEY, fairnessKey: projectFairnessKey(projectId) },
      // Filterable with its project's jobs in the Web UI (DocsProjectId = "...").
      typedSearchAttributes: [{ key: SearchAttr.projectId, value: projectId }],
    });
  });
  const permitUses = new KeyedBatcher<LimiterPermitUse>((projectId, uses) =>
    deps.temporal.workflow.getHandle(rateLimiterWorkflowId(projectId)).signal(permitsUsedSignal, uses),
  );

  /** Runs a rate-limited call, then reports its use to the limiter (best effort: an unreported permit holds its slot for its lease). */
  async function reportingUse<T>(projectId: string, permit: PermitUse | undefined, call: () => Promise<T>): Promise<T> {
    if (!permit) return call();
    try {
      return await call();
    } finally {
      const usedAtMs = Date.now();
      let requesterWorkflowId: string | undefined;
      try {
        requesterWorkflowId = Context.current().info.workflowExecution?.workflowId;
      } catch {
        // Not inside an activity: no requester to report for.
      }
      if (requesterWorkflowId) {
        await permitUses
          .add(projectId, { requesterWorkflowId, requestKey: permit.requestKey, usedAtMs })
          .catch((err: unknown) => log.warn('could not report a permit use to the limiter', { projectId, error: String(err) }));
      }
    }
  }

  return {
    /**
     * POST /v2/agent/{projectId}/job. Ambiguous failures arrive as OutcomeUnknown (non-retryable); a
     * worker that dies mid-attempt leaves send checkpoints for the workflow (./send-checkpoint.ts).
     */
    async createAgentJob({ projectId, prompt, permit }: CreateAgentJobInput): Promise<AgentJob> {
      assertValid(projectId, prompt, deps);
      return reportingUse(projectId, permit, () =>
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
    async sendAgentMessage({ projectId, jobId, prompt, permit }: SendAgentMessageInput): Promise<AgentJob> {
      assertValid(projectId, prompt, deps);
      return reportingUse(projectId, permit, () =>
        withSendCheckpoints(deps.temporal, 'sendAgentMessage', () =>
          callAdminApi('sendAgentMessage', (signal) => deps.api.sendAgentMessage(projectId, jobId, prompt, { signal })),
        ),
      );
    },

    /**
     * Asks the project's limiter workflow for a permit (run as a local activity). Signal-with-start: the
     * first request starts the limiter, on this activity's task queue, with this worker's
     * AGENT_RATE_LIMIT. Requests made while another is in flight for the project go together in the
     * next signal. The grant arrives later as permitGrantedSignal on the requester; the limiter ignores
     * a repeated requestKey, so retries of this activity never take two permits.
     */
    async requestAgentPermit({ projectId, requesterWorkflowId, requestKey }: RequestAgentPermitInput): Promise<void> {
      const { taskQueue } = Context.current().info;
      await permitRequests.add(`${taskQueue}\n${projectId}`, { request: { requesterWorkflowId, requestKey }, projectId, taskQueue });
    },
  };
}

export type AgentActivities = ReturnType<typeof createAgentActivities>;
