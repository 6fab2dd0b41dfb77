// agentJob from the client: start and return once the API job exists, await, send follow-up messages.
import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, type Client, type WorkflowHandle } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { AgentJob } from '../api/types';
import { taskQueueOf } from '../connection/settings';
import {
  MAX_REQUEST_ID_LENGTH,
  promptPreview,
  validateAgentJobInput,
  validateJobId,
  validatePrompt,
} from '../policies/validation/agent';
import {
  NEEDS_OPERATOR,
  abandonUpdate,
  agentStatusQuery,
  agentWorkflowId,
  jobIdUpdate,
  resendUpdate,
  resolveUpdate,
  sendMessageUpdate,
  type AgentJobInput,
  type AgentJobResult,
  type AgentStatus,
} from '../shared/agent-job';
import { SearchAttr } from '../shared/search-attributes';
import { WorkflowType } from '../shared/workflow-types';
import { projectFairnessKey } from '../shared/fairness';
import { checkInput } from './errors';
import { updateCurrentRun } from './update';
import { withTraceparent } from '../observability/tracing';
import {
  awaitResult,
  markdownList,
  startOptionProblems,
  type AgentJobWorkflow,
  type ProgressOptions,
  type StartOptions,
  watchStatus,
} from './start';

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
  options: Omit<StartOptions, 'requestId'> & NeedsOperatorOptions = {},
): Promise<StartedAgentJob> {
  const requestId = input.requestId ?? randomUUID();
  const withId: AgentJobInput = {
    projectId: input.projectId,
    prompt: input.prompt,
    requestId,
    ...(input.parkedTimeoutMs !== undefined ? { parkedTimeoutMs: input.parkedTimeoutMs } : {}),
  };
  checkInput([...validateAgentJobInput(withId), ...startOptionProblems(options)]);
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
  // A create whose outcome is unknown parks the job: the jobId update waits for an operator meanwhile.
  const needsOperator = options.onNeedsOperator && oncePerParking(options.onNeedsOperator);
  const watch = needsOperator && watchStatus(handle, agentStatusQuery.name, 1_000, needsOperator);
  try {
    const jobId = await withTraceparent(options.traceparent, () =>
      client.workflow.executeUpdateWithStart(jobIdUpdate, { startWorkflowOperation }),
    );
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
  } finally {
    await watch?.stop();
  }
}

export interface NeedsOperatorOptions {
  /** Called once each time the job parks (its create or message outcome is unknown); waiting goes on. */
  onNeedsOperator?: (status: AgentStatus) => void;
}

/** onNeedsOperator called once per parking of the statuses it is given, in order. */
function oncePerParking(onNeedsOperator: (status: AgentStatus) => void): (status: AgentStatus) => void {
  let parked = false;
  return (status) => {
    if (status.phase === NEEDS_OPERATOR && !parked) onNeedsOperator(status);
    parked = status.phase === NEEDS_OPERATOR;
  };
}

export async function awaitAgentJob(
  client: Client,
  workflowId: string,
  options: ProgressOptions<AgentStatus> & NeedsOperatorOptions = {},
): Promise<AgentJobResult & { workflowId: string }> {
  const { onNeedsOperator, ...progress } = options;
  if (!onNeedsOperator)
    return awaitResult<AgentJobResult, AgentStatus>(client, workflowId, agentStatusQuery.name, progress);
  const parking = oncePerParking(onNeedsOperator);
  return awaitResult<AgentJobResult, AgentStatus>(client, workflowId, agentStatusQuery.name, {
    ...progress,
    onProgress: (status) => {
      parking(status);
      progress.onProgress?.(status);
    },
  });
}

// ---- an operator settles a parked job (SPEC 3: resolve, resend, abandon) ---------------------------

/** The parked call did take effect: the job adopts `jobId` (checked to exist in its project) and goes on. */
export async function resolveAgentJob(client: Client, workflowId: string, jobId: string): Promise<AgentJob> {
  checkInput([...checkWorkflowId(workflowId), ...validateJobId(jobId)]);
  return updateCurrentRun(client, workflowId, resolveUpdate, { jobId });
}

/** The parked call did not take effect: the job makes it again, under a new permit. */
export async function resendAgentJob(client: Client, workflowId: string): Promise<void> {
  checkInput(checkWorkflowId(workflowId));
  await updateCurrentRun(client, workflowId, resendUpdate);
}

/** Give the parked job up: it ends with OutcomeUnknown (with the reason, when given). */
export async function abandonAgentJob(client: Client, workflowId: string, reason?: string): Promise<void> {
  checkInput(checkWorkflowId(workflowId));
  await updateCurrentRun(client, workflowId, abandonUpdate, reason !== undefined ? { reason } : {});
}

/** Problems with a workflow id an operator typed (empty, absurdly long). */
export function checkWorkflowId(workflowId: string): string[] {
  if (typeof workflowId !== 'string' || workflowId.trim() === '') return ['workflow id must not be empty'];
  return workflowId.length > 2 * MAX_REQUEST_ID_LENGTH + 100 ? ['workflow id is too long'] : [];
}

/** Sends a follow-up prompt to a running agent job; resolves with the refreshed job. */
export async function sendAgentMessage(client: Client, workflowId: string, prompt: string): Promise<AgentJob> {
  checkInput(validatePrompt(prompt));
  return updateCurrentRun(client, workflowId, sendMessageUpdate, prompt);
}
