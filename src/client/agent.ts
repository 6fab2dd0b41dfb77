// agentJob from the client: start and return once the API job exists, await, send follow-up messages.
import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, type Client, type WorkflowHandle } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { AgentJob } from '../api/types';
import { taskQueueOf } from '../connection/settings';
import { promptPreview, validateAgentJobInput, validatePrompt } from '../policies/validation/agent';
import {
  SearchAttr,
  WorkflowType,
  agentStatusQuery,
  agentWorkflowId,
  jobIdUpdate,
  projectFairnessKey,
  sendMessageUpdate,
  type AgentJobInput,
  type AgentJobResult,
  type AgentStatus,
} from '../shared';
import { checkInput } from './errors';
import { awaitResult, markdownList, type AgentJobWorkflow, type ProgressOptions, type StartOptions } from './start';

export function agentSummary(input: AgentJobInput): string {
  return `Agent job for project ${input.projectId}: ${promptPreview(input.prompt)}`;
}

export interface StartedAgentJob {
  workflowId: string;
  /** The admin API's job id, known as soon as the workflow created the job. */
  jobId: string;
  handle: WorkflowHandle<AgentJobWorkflow>;
}

/**
 * Starts an agentJob and returns once the API job exists (update-with-start on the jobId update).
 * A requestId makes it idempotent: the same (projectId, requestId) returns the same job and never
 * creates a second one (and so never a second pull request).
 */
export async function startAgentJob(
  client: Client,
  input: AgentJobInput,
  options: Omit<StartOptions, 'requestId'> = {},
): Promise<StartedAgentJob> {
  const requestId = input.requestId ?? randomUUID();
  const withId: AgentJobInput = { projectId: input.projectId, prompt: input.prompt, requestId };
  checkInput(validateAgentJobInput(withId));
  const workflowId = agentWorkflowId(withId.projectId, requestId);
  const startWorkflowOperation = new WithStartWorkflowOperation<AgentJobWorkflow>(WorkflowType.agentJob, {
    workflowId,
    taskQueue: taskQueueOf(options.taskQueue),
    args: [withId],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    staticSummary: agentSummary(withId),
    staticDetails: markdownList([
      ['project', withId.projectId],
      ['request id', requestId],
      ['prompt', promptPreview(withId.prompt, 200)],
    ]),
    typedSearchAttributes: [{ key: SearchAttr.projectId, value: withId.projectId }],
    // Its workflow and activity tasks share the task queue fairly with other projects' (server fairness).
    priority: { fairnessKey: projectFairnessKey(withId.projectId) },
  });
  const handle = client.workflow.getHandle<AgentJobWorkflow>(workflowId);
  try {
    const jobId = await client.workflow.executeUpdateWithStart(jobIdUpdate, { startWorkflowOperation });
    return { workflowId, jobId, handle };
  } catch (err) {
    // The same requestId was used by a workflow that has already closed: report that job.
    if (
      err instanceof WorkflowExecutionAlreadyStartedError ||
      (err instanceof Error && err.cause instanceof WorkflowExecutionAlreadyStartedError)
    ) {
      const status = await handle.query(agentStatusQuery).catch(() => undefined);
      const jobId = status?.jobId ?? (await handle.result()).jobId;
      return { workflowId, jobId, handle };
    }
    throw err;
  }
}

export async function awaitAgentJob(
  client: Client,
  workflowId: string,
  options: ProgressOptions<AgentStatus> = {},
): Promise<AgentJobResult & { workflowId: string }> {
  return awaitResult<AgentJobResult, AgentStatus>(client, workflowId, agentStatusQuery.name, options);
}

/** Sends a follow-up prompt to a running agent job; resolves with the refreshed job. */
export async function sendAgentMessage(client: Client, workflowId: string, prompt: string): Promise<AgentJob> {
  checkInput(validatePrompt(prompt));
  return client.workflow.getHandle(workflowId).executeUpdate(sendMessageUpdate, { args: [prompt] });
}
