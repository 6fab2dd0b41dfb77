// What every start and wait of the client library shares: start options, the workflows' signatures (by
// type name: the client never imports workflow code), static details, and awaiting with progress.
import type { Client } from '@temporalio/client';
import { validateTraceparent } from '../shared/trace-ids';
import type { AgentJobInput, AgentJobResult } from '../shared/agent-job';
import type { BundleKeeperInput } from '../shared/bundle-keeper';
import type { StaticExportInput, StaticExportResult } from '../shared/static-export';

export type StaticExportWorkflow = (input: StaticExportInput) => Promise<StaticExportResult>;
export type AgentJobWorkflow = (input: AgentJobInput) => Promise<AgentJobResult>;
export type BundleKeeperWorkflow = (input: BundleKeeperInput) => Promise<void>;

export interface StartOptions {
  /** Same requestId -> same workflow id: a retried start attaches to the first one. Default: random. */
  requestId?: string;
  /** Default TEMPORAL_TASK_QUEUE or docs-admin. */
  taskQueue?: string;
  /**
   * The caller's W3C trace context (`00-<trace id>-<span id>-<flags>`): the job's trace continues it.
   * Takes effect when this process traces (the OTEL_* variables, docs/operations.md "Traces").
   */
  traceparent?: string;
}

/** Problems with the start options a caller gave (its traceparent). */
export function startOptionProblems(options: Pick<StartOptions, 'traceparent'>): string[] {
  return options.traceparent === undefined ? [] : validateTraceparent(options.traceparent);
}

/** Static details as a Markdown list (items without a value left out): the Web UI runs plain lines together. */
export function markdownList(items: [label: string, value: string | undefined][]): string {
  return items.flatMap(([label, value]) => (value === undefined ? [] : [`- **${label}**: ${value}`])).join('\n');
}

export interface ProgressOptions<S> {
  /** Called with each new status query result while waiting. */
  onProgress?: (status: S) => void;
  /** Called when a status query fails (no worker took it in time, a workflow task busy or failing). */
  onProgressError?: (err: unknown) => void;
  /** How often to query the workflow's status (default 500 ms). */
  progressIntervalMs?: number;
}

/** A workflow's result with its id, awaited with progress from its `status` query. */
export async function awaitResult<R, S>(
  client: Client,
  workflowId: string,
  query: string,
  options: ProgressOptions<S>,
): Promise<R & { workflowId: string }> {
  const handle = client.workflow.getHandle(workflowId);
  const result = handle.result() as Promise<R>;
  if (!options.onProgress) return { workflowId, ...(await result) };
  const onProgress = options.onProgress;
  let done = false;
  const poller = (async () => {
    while (!done) {
      try {
        const status = await handle.client.withDeadline(Date.now() + 5_000, () => handle.query<S>(query));
        if (!done) onProgress(status);
      } catch (err) {
        // No worker yet, a busy or failing workflow task, or the workflow just closed: the result decides.
        if (!done) options.onProgressError?.(err);
      }
      await new Promise((resolve) => setTimeout(resolve, options.progressIntervalMs ?? 500));
    }
  })();
  try {
    return { workflowId, ...(await result) };
  } finally {
    done = true;
    await poller;
  }
}
