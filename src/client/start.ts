// What every start and wait of the client library shares: start options, the workflows' signatures (by
// type name: the client never imports workflow code), static details, and awaiting with progress.
import type { Client, WorkflowHandle } from '@temporalio/client';
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

/**
 * Queries a workflow's `query` every `intervalMs` until stopped: each answer to onStatus, each failure
 * (no worker yet, a busy or failing workflow task, the workflow just closed) to onError.
 */
export function watchStatus<S>(
  handle: WorkflowHandle,
  query: string,
  intervalMs: number,
  onStatus: (status: S) => void,
  onError?: (err: unknown) => void,
): { stop(): Promise<void> } {
  let done = false;
  const loop = (async () => {
    while (!done) {
      try {
        const status = await handle.client.withDeadline(Date.now() + 5_000, () => handle.query<S>(query));
        if (!done) onStatus(status);
      } catch (err) {
        if (!done) onError?.(err);
      }
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })();
  return {
    async stop() {
      done = true;
      await loop;
    },
  };
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
  const { onProgress, onProgressError, progressIntervalMs = 500 } = options;
  // The result decides: a failed query while it comes is only reported.
  const watch = onProgress && watchStatus(handle, query, progressIntervalMs, onProgress, onProgressError);
  try {
    return { workflowId, ...(await result) };
  } finally {
    await watch?.stop();
  }
}
