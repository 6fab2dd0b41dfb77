// Counts what a sample of closed workflows' histories hold, per workflow: events by type, and the
// workflow tasks that timed out (by timeout type) or failed (by cause). A workflow task that timed out
// was evicted and replayed from the start by the worker that took it, so these counts say where a
// worker's CPU went on replays. Run the throughput benchmark against a server that outlives it
// (TEMPORAL_ADDRESS), then, per task queue:
//
//   npx tsx bench/history-summary.ts 127.0.0.1:7233 "TaskQueue='bench-docs-admin-<tag>' AND WorkflowType='agentJob'" [sample]
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

const { EventType, TimeoutType, WorkflowTaskFailedCause } = temporal.api.enums.v1;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

export interface HistorySummary {
  query: string;
  matched: number;
  sampled: number;
  /** Mean events per workflow, by event type (EVENT_TYPE_ left off). */
  eventsPerWorkflow: Record<string, number>;
  /** Sampled workflows with at least one workflow task timed out. */
  withTaskTimeout: number;
  taskTimeouts: Record<string, number>;
  taskFailures: Record<string, number>;
}

const add = (counts: Record<string, number>, key: string): void => {
  counts[key] = (counts[key] ?? 0) + 1;
};

/** Adds one history's events to the counts; true when one of its workflow tasks timed out. */
function countHistory(events: HistoryEvent[], counts: Omit<HistorySummary, 'query' | 'matched' | 'sampled'>): boolean {
  let timedOut = false;
  for (const e of events) {
    add(counts.eventsPerWorkflow, (EventType[e.eventType ?? 0] ?? String(e.eventType)).replace('EVENT_TYPE_', ''));
    const timeout = e.workflowTaskTimedOutEventAttributes;
    if (timeout) {
      timedOut = true;
      add(counts.taskTimeouts, TimeoutType[timeout.timeoutType ?? 0] ?? String(timeout.timeoutType));
    }
    const failed = e.workflowTaskFailedEventAttributes;
    if (failed) add(counts.taskFailures, WorkflowTaskFailedCause[failed.cause ?? 0] ?? String(failed.cause));
  }
  return timedOut;
}

/** Summarises up to `sample` workflows spread evenly over those the visibility query matches. */
export async function summariseHistories(client: Client, query: string, sample = 60): Promise<HistorySummary> {
  const ids: string[] = [];
  for await (const wf of client.workflow.list({ query })) ids.push(wf.workflowId);
  const step = Math.max(1, Math.floor(ids.length / sample));
  const picked = ids.filter((_, i) => i % step === 0).slice(0, sample);
  const counts = { eventsPerWorkflow: {}, withTaskTimeout: 0, taskTimeouts: {}, taskFailures: {} };
  for (const id of picked) {
    const history = await client.workflow.getHandle(id).fetchHistory();
    if (countHistory(history.events ?? [], counts)) counts.withTaskTimeout += 1;
  }
  const n = Math.max(1, picked.length);
  const eventsPerWorkflow = Object.fromEntries(
    Object.entries(counts.eventsPerWorkflow as Record<string, number>).map(([k, v]) => [
      k,
      Math.round((100 * v) / n) / 100,
    ]),
  );
  return { query, matched: ids.length, sampled: picked.length, ...counts, eventsPerWorkflow };
}

if (require.main === module) {
  const [address, query, sample] = process.argv.slice(2);
  if (!address || !query) {
    process.stderr.write('usage: npx tsx bench/history-summary.ts <temporal address> "<visibility query>" [sample]\n');
    process.exit(2);
  }
  void (async () => {
    const connection = await Connection.connect({ address });
    try {
      const summary = await summariseHistories(new Client({ connection }), query, sample ? Number(sample) : undefined);
      process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    } finally {
      await connection.close();
    }
  })();
}
