// What a burst cost a project's rate limiter, read from its histories: workflow tasks and events (each
// a database write on the server), runs (continue-as-new mid-burst), and the stalls in which it answered
// nothing: a task left on a sticky queue until it timed out, or a task the server refused.
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { rateLimiterWorkflowId } from '../../src/shared/rate-limiter';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const { EventType, TimeoutType } = temporal.api.enums.v1;

export interface LimiterLoad {
  workflowTasks: number;
  events: number;
  /** Runs the burst touched: one more per continue-as-new. */
  runs: number;
  /** Tasks that waited out the sticky timeout (the limiter answered nothing meanwhile). */
  stickyTimeouts: number;
  /** Tasks the server refused (a continue-as-new while messages arrived: the run then replays in full). */
  failedTasks: number;
  /** Grant signals sent in the task that ended a run: never delivered, each requester waits for its recheck. */
  lostGrants: number;
}

/** Counts the events of these runs' histories from `sinceMs` until `untilMs`. */
export function countLimiterLoad(
  runs: readonly (readonly HistoryEvent[])[],
  sinceMs: number,
  untilMs = Number.POSITIVE_INFINITY,
): LimiterLoad {
  const load: LimiterLoad = { workflowTasks: 0, events: 0, runs: 0, stickyTimeouts: 0, failedTasks: 0, lostGrants: 0 };
  for (const events of runs) {
    const inBurst = events.filter((e) => {
      const atMs = tsToMs(e.eventTime);
      return atMs >= sinceMs && atMs <= untilMs;
    });
    if (inBurst.length === 0) continue;
    load.runs += 1;
    load.events += inBurst.length;
    for (const e of inBurst) {
      if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) load.workflowTasks += 1;
      if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED) load.failedTasks += 1;
      if (e.workflowTaskTimedOutEventAttributes?.timeoutType === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START)
        load.stickyTimeouts += 1;
    }
    load.lostGrants += grantsInEndingTask(inBurst);
  }
  return load;
}

const RUN_ENDS = new Set<number>([
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
]);

/** Grant signals initiated by the last task of a run that ended (continued as new or completed). */
function grantsInEndingTask(events: readonly HistoryEvent[]): number {
  if (!events.some((e) => RUN_ENDS.has(e.eventType ?? 0))) return 0;
  const lastTask = events.findLastIndex((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  return events
    .slice(lastTask + 1)
    .filter((e) => e.eventType === EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED).length;
}

/**
 * The load on `projectId`'s limiter from `sinceMs` until `untilMs` (default now), over every run open in
 * that time. Ending at the burst's last create leaves out the run a quiet limiter compacts into after it.
 */
export async function limiterLoad(
  client: Client,
  projectId: string,
  sinceMs: number,
  untilMs?: number,
): Promise<LimiterLoad> {
  const workflowId = rateLimiterWorkflowId(projectId);
  const since = new Date(sinceMs).toISOString();
  const query = `WorkflowId = '${workflowId}' AND (CloseTime >= '${since}' OR ExecutionStatus = 'Running')`;
  const histories: HistoryEvent[][] = [];
  for await (const run of client.workflow.list({ query })) {
    const history = await client.workflow.getHandle(workflowId, run.runId).fetchHistory();
    histories.push(history.events ?? []);
  }
  return countLimiterLoad(histories, sinceMs, untilMs);
}

export function describeLimiterLoad(load: LimiterLoad, whose = "project A's limiter"): string {
  return (
    `  ${whose}: ${load.workflowTasks} workflow tasks, ${load.events} events, ${load.runs} run(s), ` +
    `${load.stickyTimeouts} sticky timeout(s), ${load.failedTasks} refused task(s), ${load.lostGrants} grant(s) lost at a run's end`
  );
}
