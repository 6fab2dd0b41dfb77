// A workflow's state for people and scripts: describe(), its live `status` query, result or failure.
import { WorkflowNotFoundError, type Client, type WorkflowExecutionDescription } from '@temporalio/client';
import type { SearchAttributePair } from '@temporalio/common';
import { SearchAttr } from '../shared/search-attributes';
import type { AgentStatus } from '../shared/agent-job';
import type { ExportStatus } from '../shared/static-export';
import type { KeeperStatus } from '../shared/bundle-keeper';
import { failureReason } from '../shared/failures';

export interface WorkflowStatusReport {
  workflowId: string;
  runId: string;
  type: string;
  /** RUNNING, COMPLETED, FAILED, ... */
  status: string;
  taskQueue: string;
  startTime: string;
  closeTime: string | null;
  summary: string | null;
  searchAttributes: Record<string, string>;
  /** The workflow's `status` query (export/agent/keeper status), null when it did not answer. */
  details: ExportStatus | AgentStatus | KeeperStatus | Record<string, unknown> | null;
  /** The result, when COMPLETED. */
  result?: unknown;
  /** `type: message` of the failure, when FAILED. */
  failure?: string;
}

/** describe() plus the `status` query (bounded by timeoutMs, since a workflow without a worker never answers). */
export async function getStatus(
  client: Client,
  workflowId: string,
  options: { queryTimeoutMs?: number } = {},
): Promise<WorkflowStatusReport> {
  const handle = client.workflow.getHandle(workflowId);
  let description: WorkflowExecutionDescription;
  try {
    description = await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) {
      throw new Error(`no workflow with id "${workflowId}" in namespace ${client.options.namespace}`, { cause: err });
    }
    throw err;
  }
  const details = await client
    .withDeadline(Date.now() + (options.queryTimeoutMs ?? 3_000), () =>
      handle.query<WorkflowStatusReport['details']>('status'),
    )
    .catch(() => null);
  const searchAttributes: Record<string, string> = {};
  for (const pair of description.typedSearchAttributes.getAll() as SearchAttributePair[]) {
    if (Object.values(SearchAttr).some((key) => key.name === pair.key.name))
      searchAttributes[pair.key.name] = String(pair.value);
  }
  const report: WorkflowStatusReport = {
    workflowId,
    runId: description.runId,
    type: description.type,
    status: description.status.name,
    taskQueue: description.taskQueue,
    startTime: description.startTime.toISOString(),
    closeTime: description.closeTime ? description.closeTime.toISOString() : null,
    summary: (await description.staticSummary().catch(() => undefined)) ?? null,
    searchAttributes,
    details,
  };
  if (description.status.name === 'COMPLETED') {
    report.result = await handle.result().catch(() => undefined);
  } else if (description.status.name === 'FAILED') {
    report.failure = await handle.result().then(
      () => undefined,
      (err: unknown) => failureReason(err),
    );
  }
  return report;
}
