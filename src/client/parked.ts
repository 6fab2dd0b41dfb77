// The agent jobs that wait for an operator (SPEC 3, `docs-admin parked`): found by their search
// attribute, confirmed by their live status query (visibility lags a little), each with what a person
// needs to settle it.
import type { Client } from '@temporalio/client';
import { validateProjectId } from '../policies/validation/agent';
import { NEEDS_OPERATOR, agentStatusQuery, type ParkedCall } from '../shared/agent-job';
import { SearchAttr } from '../shared/search-attributes';
import { WorkflowType } from '../shared/workflow-types';
import { checkInput } from './errors';

export interface ParkedAgentJob {
  workflowId: string;
  projectId: string;
  /** Which call's outcome is unknown. */
  unknown: ParkedCall['operation'];
  /** The job a parked message was for (null for a create). */
  jobId: string | null;
  /** When the call whose outcome is unknown ended, and the job parked. */
  parkedAt: string;
  /** When the job ends with OutcomeUnknown unless settled. */
  givesUpAt: string;
  /** What to look up in the platform's dashboard first. */
  check: string;
  /** The commands that settle it, one per decision. */
  settle: { resolve: string; resend: string; abandon: string };
}

/** The CLI commands that settle a parked call of `workflowId`. */
export function settleCommands(workflowId: string, parked: Pick<ParkedCall, 'jobId'>): ParkedAgentJob['settle'] {
  return {
    resolve: `docs-admin resolve ${workflowId} --job-id ${parked.jobId ?? '<the job id found in the dashboard>'}`,
    resend: `docs-admin resend ${workflowId}`,
    abandon: `docs-admin abandon ${workflowId} --reason '<why>'`,
  };
}

/** The visibility query of the parked agent jobs, of one project when given. */
export function parkedQuery(projectId?: string): string {
  const clauses = [
    `WorkflowType = '${WorkflowType.agentJob}'`,
    `ExecutionStatus = 'Running'`,
    `${SearchAttr.jobStatus.name} = '${NEEDS_OPERATOR}'`,
  ];
  if (projectId !== undefined) clauses.push(`${SearchAttr.projectId.name} = '${projectId}'`);
  return clauses.join(' AND ');
}

/** The agent jobs waiting for an operator, oldest parking first. */
export async function listParkedAgentJobs(
  client: Client,
  options: { projectId?: string } = {},
): Promise<ParkedAgentJob[]> {
  // Validated before it becomes part of a query: ids hold no quotes or spaces.
  if (options.projectId !== undefined) checkInput(validateProjectId(options.projectId));
  const found: ParkedAgentJob[] = [];
  for await (const execution of client.workflow.list({ query: parkedQuery(options.projectId) })) {
    const handle = client.workflow.getHandle(execution.workflowId);
    const parked = (await handle.query(agentStatusQuery).catch(() => undefined))?.parked;
    if (!parked) continue; // settled since the visibility record was written
    found.push({
      workflowId: execution.workflowId,
      projectId: parked.projectId,
      unknown: parked.operation,
      jobId: parked.jobId,
      parkedAt: parked.to,
      givesUpAt: parked.deadline,
      check: parked.check,
      settle: settleCommands(execution.workflowId, parked),
    });
  }
  return found.sort((a, b) => Date.parse(a.parkedAt) - Date.parse(b.parkedAt));
}
