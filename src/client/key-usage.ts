// Which payload keys the namespace still needs: the `encryption-key-id` of every encrypted payload in
// the histories of open workflows and in Schedules (their action's input and memo, and their own memo),
// read raw, never decoded, so a key no longer in the file is still found. What that tells an operator:
// docs/security.md, "Rotating a key: staged, so no host meets a key it does not hold" (`keys in-use`).
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { KEY_ID_KEY } from '../codec/encryption-codec';

/** Bounds the scan: a namespace with more open workflows is reported as not complete. */
export const DEFAULT_WORKFLOW_LIMIT = 10_000;
const CONCURRENCY = 8;
const OPEN = 'ExecutionStatus = "Running"';
const EXAMPLES = 3;

/** Every key id found in a message of the server's API (a history, a schedule), added to `found`. */
export function keyIdsIn(value: unknown, found: Set<string> = new Set()): Set<string> {
  if (!value || typeof value !== 'object' || ArrayBuffer.isView(value)) return found;
  const keyId = (value as { metadata?: Record<string, unknown> }).metadata?.[KEY_ID_KEY];
  if (keyId && ArrayBuffer.isView(keyId)) found.add(Buffer.from(keyId as Uint8Array).toString('utf8'));
  for (const child of Object.values(value)) keyIdsIn(child, found);
  return found;
}

export interface KeyInUse {
  keyId: string;
  workflows: number;
  schedules: number;
  /** A few of the workflow ids and schedule ids that hold it. */
  examples: string[];
}

export interface KeyUsageReport {
  keys: KeyInUse[];
  workflowsScanned: number;
  schedulesScanned: number;
  /** False when the scan stopped at the workflow limit: more open workflows may hold other keys. */
  complete: boolean;
}

export interface KeyUsageOptions {
  /** Open workflows to scan at most (default DEFAULT_WORKFLOW_LIMIT). */
  limit?: number;
  /** Told after each batch of workflows and once for the schedules. */
  onProgress?: (progress: { workflowsScanned: number; workflowsOpen: number; schedulesScanned: number }) => void;
}

/** Tallies key ids per holder (a workflow or a schedule). */
class Tally {
  private readonly byKey = new Map<string, KeyInUse>();

  add(keyIds: Set<string>, holder: string, kind: 'workflows' | 'schedules'): void {
    for (const keyId of keyIds) {
      const entry = this.byKey.get(keyId) ?? { keyId, workflows: 0, schedules: 0, examples: [] };
      entry[kind] += 1;
      if (entry.examples.length < EXAMPLES) entry.examples.push(holder);
      this.byKey.set(keyId, entry);
    }
  }

  keys(): KeyInUse[] {
    return [...this.byKey.values()].sort((a, b) => a.keyId.localeCompare(b.keyId));
  }
}

/** The ids of every Schedule in the client's namespace (raw: no memo is decoded). */
export async function* scheduleIds(client: Client): AsyncGenerator<string> {
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.listSchedules({
      namespace: client.options.namespace,
      maximumPageSize: 100,
      nextPageToken,
    });
    for (const entry of page.schedules ?? []) if (entry.scheduleId) yield entry.scheduleId;
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
}

/** The key ids a Schedule holds: in its action (`action`) and in its own memo (`memo`). */
export async function scheduleKeyIds(
  client: Client,
  scheduleId: string,
): Promise<{ action: Set<string>; memo: Set<string> }> {
  const raw = await client.workflowService.describeSchedule({ namespace: client.options.namespace, scheduleId });
  return { action: keyIdsIn(raw.schedule?.action), memo: keyIdsIn(raw.memo) };
}

async function* openExecutions(client: Client): AsyncGenerator<{ workflowId: string; runId: string }> {
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.listWorkflowExecutions({
      namespace: client.options.namespace,
      query: OPEN,
      pageSize: 100,
      nextPageToken,
    });
    for (const info of page.executions ?? [])
      yield { workflowId: info.execution?.workflowId ?? '', runId: info.execution?.runId ?? '' };
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
}

/** The key ids of a run's history; none when it was deleted since the list. */
async function historyKeyIds(client: Client, workflowId: string, runId: string): Promise<Set<string>> {
  try {
    return keyIdsIn(await client.workflow.getHandle(workflowId, runId).fetchHistory());
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return new Set();
    throw err;
  }
}

export async function keysInUse(client: Client, options: KeyUsageOptions = {}): Promise<KeyUsageReport> {
  const limit = options.limit ?? DEFAULT_WORKFLOW_LIMIT;
  const tally = new Tally();
  const { count: workflowsOpen } = await client.workflow.count(OPEN);
  let workflowsScanned = 0;
  let complete = true;
  let batch: { workflowId: string; runId: string }[] = [];
  const scanBatch = async () => {
    const found = await Promise.all(batch.map((run) => historyKeyIds(client, run.workflowId, run.runId)));
    found.forEach((keyIds, i) => tally.add(keyIds, batch[i]?.workflowId ?? '', 'workflows'));
    workflowsScanned += batch.length;
    batch = [];
    options.onProgress?.({ workflowsScanned, workflowsOpen, schedulesScanned: 0 });
  };
  for await (const execution of openExecutions(client)) {
    if (workflowsScanned + batch.length >= limit) {
      complete = false;
      break;
    }
    batch.push(execution);
    if (batch.length === CONCURRENCY) await scanBatch();
  }
  if (batch.length > 0) await scanBatch();
  let schedulesScanned = 0;
  for await (const scheduleId of scheduleIds(client)) {
    const { action, memo } = await scheduleKeyIds(client, scheduleId);
    tally.add(new Set([...action, ...memo]), scheduleId, 'schedules');
    schedulesScanned += 1;
  }
  options.onProgress?.({ workflowsScanned, workflowsOpen, schedulesScanned });
  return { keys: tally.keys(), workflowsScanned, schedulesScanned, complete };
}
