// Agent job activities: thin calls of the admin API (through callAdminApi, which maps errors to
// Temporal failures) and the permit request to the per-project rate limiter workflow.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { AgentJob } from '../api/types';
import {
  type AgentRateLimiterInput,
  type PermitRequest,
  WorkflowType,
  projectFairnessKey,
  rateLimiterWorkflowId,
  requestPermitSignal,
} from '../shared';
import { validateProjectId, validatePrompt } from '../validation/agent';
import { callAdminApi } from './api-call';
import type { ActivityDeps } from './deps';

export interface CreateAgentJobInput {
  projectId: string;
  prompt: string;
}

export interface GetAgentJobInput {
  projectId: string;
  jobId: string;
}

export interface SendAgentMessageInput extends GetAgentJobInput {
  prompt: string;
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

function noteRetry(deps: ActivityDeps): void {
  try {
    const info = Context.current().info;
    if (info.attempt > 1) deps.metrics.activityRetry(info.activityType);
  } catch {
    // Not inside an activity (direct call from a script or unit test).
  }
}

export function createAgentActivities(deps: ActivityDeps) {
  return {
    /** POST /v2/agent/{projectId}/job. Ambiguous failures arrive as OutcomeUnknown (non-retryable). */
    async createAgentJob({ projectId, prompt }: CreateAgentJobInput): Promise<AgentJob> {
      assertValid(projectId, prompt, deps);
      noteRetry(deps);
      return callAdminApi('createAgentJob', (signal) => deps.api.createAgentJob(projectId, prompt, { signal }));
    },

    /** GET /v2/agent/{projectId}/job/{id}: one status poll. */
    async getAgentJob({ projectId, jobId }: GetAgentJobInput): Promise<AgentJob> {
      noteRetry(deps);
      deps.metrics.poll('agent');
      return callAdminApi('getAgentJob', (signal) => deps.api.getAgentJob(projectId, jobId, { signal }));
    },

    /** POST /v2/agent/{projectId}/job/{id}/message. Ambiguous failures arrive as OutcomeUnknown. */
    async sendAgentMessage({ projectId, jobId, prompt }: SendAgentMessageInput): Promise<AgentJob> {
      assertValid(projectId, prompt, deps);
      noteRetry(deps);
      return callAdminApi('sendAgentMessage', (signal) => deps.api.sendAgentMessage(projectId, jobId, prompt, { signal }));
    },

    /**
     * Asks the project's limiter workflow for a permit (signal-with-start: the first request starts it,
     * on this activity's task queue, with this worker's AGENT_RATE_LIMIT). The grant arrives later as
     * permitGrantedSignal on the requester; the limiter ignores a repeated requestKey, so retries of
     * this activity never take two permits.
     */
    async requestAgentPermit({ projectId, requesterWorkflowId, requestKey }: RequestAgentPermitInput): Promise<void> {
      const limiterInput: AgentRateLimiterInput = {
        projectId,
        limit: deps.agentRateLimit.limit,
        windowMs: deps.agentRateLimit.windowMs,
      };
      await deps.temporal.workflow.signalWithStart(WorkflowType.agentRateLimiter, {
        workflowId: rateLimiterWorkflowId(projectId),
        taskQueue: Context.current().info.taskQueue,
        args: [limiterInput],
        signal: requestPermitSignal,
        signalArgs: [{ requesterWorkflowId, requestKey }],
        staticSummary: `Agent rate limiter for project ${projectId} (${limiterInput.limit} per ${limiterInput.windowMs} ms)`,
        // Every permit of the project passes through this one workflow: its tasks go first.
        priority: { priorityKey: LIMITER_PRIORITY_KEY, fairnessKey: projectFairnessKey(projectId) },
      });
    },
  };
}

export type AgentActivities = ReturnType<typeof createAgentActivities>;
