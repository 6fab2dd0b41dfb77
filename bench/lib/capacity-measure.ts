// What one lifecycle cost, attributed to its own runs: event histories (every run of a workflow id,
// its children, continue-as-new chains followed back), their PostgreSQL rows (history_node by tree id,
// which is the run id; executions; visibility), and machine-wide counters (PostgreSQL tuple writes and
// WAL, the server's `action` metric by namespace) for phases measured on a quiet machine.
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { psql } from '../../scripts/cluster/postgres';
import { CLUSTER_PORTS, HOST } from '../../scripts/cluster/layout';
import { countActions, countTasks, type EventLite } from './capacity-model';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;

export interface RunCost {
  runs: { workflowId: string; runId: string }[];
  events: number;
  actions: number;
  tasks: number;
  timers: number;
  /** Activity (or local activity) results that were a poll or check, for naive and real shapes alike. */
  byType: Record<string, number>;
}

function lite(e: HistoryEvent): EventLite {
  const type = (EventType[e.eventType ?? 0] ?? 'UNKNOWN').replace(/^EVENT_TYPE_/, '');
  return {
    type,
    attempt: e.activityTaskStartedEventAttributes?.attempt ?? undefined,
    marker: e.markerRecordedEventAttributes?.markerName ?? undefined,
    taskCompletedId: Number(e.markerRecordedEventAttributes?.workflowTaskCompletedEventId ?? -1),
    keys: Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}),
  };
}

/** Every run of a workflow id (back along continue-as-new) and of the children they started. */
async function collectRuns(
  client: Client,
  workflowId: string,
  seen: Set<string>,
  out: HistoryEvent[][],
  ids: RunCost['runs'],
) {
  let runId: string | undefined;
  for (;;) {
    const handle = client.workflow.getHandle(workflowId, runId);
    const history = await handle.fetchHistory();
    const events = history.events ?? [];
    const started = events[0]?.workflowExecutionStartedEventAttributes;
    const thisRun = runId ?? started?.originalExecutionRunId ?? '';
    if (seen.has(`${workflowId}/${thisRun}`)) return;
    seen.add(`${workflowId}/${thisRun}`);
    out.push(events);
    ids.push({ workflowId, runId: runId ?? (await handle.describe()).runId });
    for (const e of events) {
      const child = e.childWorkflowExecutionStartedEventAttributes?.workflowExecution;
      if (child?.workflowId) await collectRuns(client, child.workflowId, seen, out, ids);
    }
    runId = started?.continuedExecutionRunId || undefined;
    if (!runId) return;
  }
}

/** The histories of these workflow ids (all runs, children included), counted. */
export async function historyCost(client: Client, workflowIds: readonly string[]): Promise<RunCost> {
  const histories: HistoryEvent[][] = [];
  const runs: RunCost['runs'] = [];
  const seen = new Set<string>();
  for (const id of workflowIds) await collectRuns(client, id, seen, histories, runs);
  const cost: RunCost = { runs, events: 0, actions: 0, tasks: 0, timers: 0, byType: {} };
  for (const h of histories) {
    const events = h.map(lite);
    cost.events += events.length;
    cost.actions += countActions(events);
    cost.tasks += countTasks(events);
    cost.timers += events.filter((e) => e.type === 'TIMER_STARTED').length;
    for (const e of events) cost.byType[e.type] = (cost.byType[e.type] ?? 0) + 1;
  }
  return cost;
}

export interface RowCost {
  historyNodeRows: number;
  historyNodeBytes: number;
  /** executions + current_executions + executions_visibility rows of the runs, and their bytes now. */
  stateRows: number;
  stateBytes: number;
}

/** The durable rows the runs left in PostgreSQL (run id = history tree id). */
export function rowCost(runIds: readonly string[]): RowCost {
  if (runIds.length === 0) return { historyNodeRows: 0, historyNodeBytes: 0, stateRows: 0, stateBytes: 0 };
  const hex = runIds.map((r) => `decode('${r.replace(/-/g, '')}','hex')`).join(',');
  const text = runIds.map((r) => `'${r}'`).join(',');
  const [node] = psql(
    'temporal',
    `SELECT count(*), coalesce(sum(pg_column_size(h.*)),0) FROM history_node h WHERE tree_id IN (${hex})`,
  );
  const [state] = psql(
    'temporal',
    `SELECT count(*), coalesce(sum(pg_column_size(e.*)),0) FROM executions e WHERE run_id IN (${hex})`,
  );
  const [vis] = psql(
    'temporal_visibility',
    `SELECT count(*), coalesce(sum(pg_column_size(v.*)),0) FROM executions_visibility v WHERE run_id IN (${text})`,
  );
  return {
    historyNodeRows: Number(node![0]),
    historyNodeBytes: Number(node![1]),
    stateRows: Number(state![0]) + Number(vis![0]),
    stateBytes: Number(state![1]) + Number(vis![1]),
  };
}

export interface MachineCounters {
  /** n_tup_ins + n_tup_upd + n_tup_del over both databases' tables. */
  tupleWrites: number;
  walBytes: number;
  /** The server's `action` counter: this namespace, and every other (how much else ran meanwhile). */
  actions: number;
  otherActions: number;
}

function tupleWrites(database: string): number {
  const [row] = psql(database, 'SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del),0) FROM pg_stat_user_tables');
  return Number(row![0]);
}

async function actionMetric(namespace: string): Promise<{ mine: number; other: number }> {
  const text = await (await fetch(`http://${HOST}:${CLUSTER_PORTS.metrics}/metrics`)).text();
  let mine = 0;
  let other = 0;
  for (const m of text.matchAll(/^action\{[^}]*namespace="([^"]*)"[^}]*\} (\S+)$/gm)) {
    if (m[1] === namespace.replace(/[^A-Za-z0-9_]/g, '_')) mine += Number(m[2]);
    else other += Number(m[2]);
  }
  return { mine, other };
}

/** A reading of the machine-wide counters (pg_stat counters lag up to a second: read after a pause). */
export async function readCounters(namespace: string): Promise<MachineCounters> {
  const [wal] = psql('temporal', "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')");
  const metric = await actionMetric(namespace);
  return {
    tupleWrites: tupleWrites('temporal') + tupleWrites('temporal_visibility'),
    walBytes: Number(wal![0]),
    actions: metric.mine,
    otherActions: metric.other,
  };
}

export function counterDelta(a: MachineCounters, b: MachineCounters): MachineCounters {
  return {
    tupleWrites: b.tupleWrites - a.tupleWrites,
    walBytes: b.walBytes - a.walBytes,
    actions: b.actions - a.actions,
    otherActions: b.otherActions - a.otherActions,
  };
}
