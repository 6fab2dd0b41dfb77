// staticExport from the client: start (idempotent with a requestId), await with progress, or both.
import { randomUUID } from 'node:crypto';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { taskQueueOf } from '../connection/settings';
import { validateRequestId } from '../policies/validation/agent';
import { exportInputProblems, normalizeExportInput } from '../policies/validation/export';
import { SearchAttr } from '../shared/search-attributes';
import { WorkflowType } from '../shared/workflow-types';
import {
  exportStatusQuery,
  exportWorkflowId,
  type ExportStatus,
  type StaticExportInput,
  type StaticExportResult,
} from '../shared/static-export';
import { checkInput } from './errors';
import { withTraceparent } from '../observability/tracing';
import {
  awaitResult,
  markdownList,
  startOptionProblems,
  type ProgressOptions,
  type StartOptions,
  type StaticExportWorkflow,
} from './start';

export function exportSummary(input: StaticExportInput): string {
  return `Export ${input.domain}${input.version ? ` (version ${input.version})` : ''}`;
}

function exportDetails(input: StaticExportInput, requestId: string): string {
  return markdownList([
    ['domain', input.domain],
    ['version', input.version ?? 'latest published'],
    ['paths', input.paths ? input.paths.join(', ') : 'all pages'],
    ['request id', requestId],
  ]);
}

/**
 * Starts a staticExport (or, with a requestId already used, returns the existing one). Throws
 * InvalidInputError before starting anything when the input is invalid.
 */
export async function startExport(
  client: Client,
  input: StaticExportInput,
  options: StartOptions = {},
): Promise<WorkflowHandle<StaticExportWorkflow>> {
  checkInput(exportInputProblems(input));
  const normalized = normalizeExportInput(input);
  const requestId = options.requestId ?? randomUUID();
  checkInput([...validateRequestId(requestId), ...startOptionProblems(options)]);
  const workflowId = exportWorkflowId(normalized.domain, requestId);
  try {
    return await withTraceparent(options.traceparent, () =>
      client.workflow.start<StaticExportWorkflow>(WorkflowType.staticExport, {
        workflowId,
        taskQueue: taskQueueOf(options.taskQueue),
        args: [normalized],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        staticSummary: exportSummary(normalized),
        staticDetails: exportDetails(normalized, requestId),
        typedSearchAttributes: [{ key: SearchAttr.domain, value: normalized.domain }],
      }),
    );
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError)
      return client.workflow.getHandle<StaticExportWorkflow>(workflowId);
    throw err;
  }
}

export async function awaitExport(
  client: Client,
  workflowId: string,
  options: ProgressOptions<ExportStatus> = {},
): Promise<StaticExportResult & { workflowId: string }> {
  return awaitResult<StaticExportResult, ExportStatus>(client, workflowId, exportStatusQuery.name, options);
}

/** startExport, then awaitExport. */
export async function runExport(
  client: Client,
  input: StaticExportInput,
  options: StartOptions & ProgressOptions<ExportStatus> = {},
): Promise<StaticExportResult & { workflowId: string }> {
  const handle = await startExport(client, input, options);
  return awaitExport(client, handle.workflowId, options);
}
