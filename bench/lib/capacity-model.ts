// The capacity model's arithmetic, pure: Temporal Cloud actions counted from event histories by the
// published rules (https://docs.temporal.io/cloud/actions), straight-line fits of a lifecycle's costs
// against its number of polls, and the extrapolation to a fleet of projects. Unit-tested in
// test/unit/capacity-model.test.ts.

/** The parts of a history event the rules read (from @temporalio/proto's HistoryEvent). */
export interface EventLite {
  /** EventType name without its prefix, e.g. TIMER_STARTED. */
  type: string;
  /** ActivityTaskStarted: the attempt that ran (earlier attempts leave no event of their own). */
  attempt?: number;
  /** MarkerRecorded: marker name, and the workflow task that recorded it. */
  marker?: string;
  taskCompletedId?: number;
  /** UpsertWorkflowSearchAttributes: the keys it sets. */
  keys?: string[];
}

const ONE_EACH = new Set([
  // Workflow started: client start, continue-as-new (the new run's start) and child start (the
  // child's own start; its parent's initiation below is the second of the two child actions).
  'WORKFLOW_EXECUTION_STARTED',
  'START_CHILD_WORKFLOW_EXECUTION_INITIATED',
  'TIMER_STARTED',
  // A signal counts once, whoever sends it: counted where it is received.
  'WORKFLOW_EXECUTION_SIGNALED',
  'WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
  'WORKFLOW_EXECUTION_OPTIONS_UPDATED',
]);
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

/**
 * Actions in one history by Temporal Cloud's rules. Not in a history, so not counted here: queries,
 * activity heartbeats, rejected updates (the benchmark reads those from the server's `action` metric).
 */
export function countActions(events: readonly EventLite[]): number {
  let actions = 0;
  const laTasks = new Set<number>();
  for (const e of events) {
    if (ONE_EACH.has(e.type)) actions += 1;
    else if (e.type === 'ACTIVITY_TASK_STARTED') actions += Math.max(1, e.attempt ?? 1);
    else if (e.type === 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES') {
      // Versioning's own attribute is exempt.
      if ((e.keys ?? []).some((k) => k !== 'TemporalChangeVersion')) actions += 1;
    } else if (e.type === 'MARKER_RECORDED' && e.marker === LOCAL_ACTIVITY_MARKER) {
      // All local activities recorded by one workflow task are one action.
      laTasks.add(e.taskCompletedId ?? -1);
    }
  }
  return actions + laTasks.size;
}

/** Workflow and activity tasks a worker handled, by the history (what worker CPU is spent on). */
export function countTasks(events: readonly EventLite[]): number {
  return events.filter((e) => e.type === 'WORKFLOW_TASK_COMPLETED' || e.type === 'ACTIVITY_TASK_STARTED').length;
}

/** Least-squares line y = a + b x. */
export function fitLine(points: readonly { x: number; y: number }[]): { a: number; b: number } {
  const n = points.length;
  if (n === 0) return { a: 0, b: 0 };
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  const sxx = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  const b = sxx === 0 ? 0 : points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0) / sxx;
  return { a: my - b * mx, b };
}

/**
 * Status polls of an agent job that stays active `activeMs`, by the workflow's own policy
 * (agentPollDelay: half the elapsed time, 3 s floor, 28 s cap, jitter from a hash of what it saw).
 */
export function agentPolls(
  activeMs: number,
  delay: (obs: { atMs: number; status: string }[], nowMs: number) => number,
): number {
  const obs = [{ atMs: 0, status: 'active' }];
  let t = 0;
  let polls = 0;
  while (t < activeMs) {
    t += delay(obs, t);
    polls++;
    obs.push({ atMs: t, status: t < activeMs ? 'active' : 'completed' });
  }
  return polls;
}

/** Polls of the naive shape: one every pollMs, the first pollMs after the create. */
export const naivePolls = (activeMs: number, pollMs: number): number => Math.max(1, Math.ceil(activeMs / pollMs));

/** What one lifecycle costs, in the units the fleet arithmetic adds up. */
export interface UnitCost {
  events: number;
  actions: number;
  /** PostgreSQL tuple writes (inserts + updates + deletes) and WAL bytes. */
  tupleWrites: number;
  walBytes: number;
  workerCpuMs: number;
}

export interface FleetInput {
  projects: number;
  /** Agent jobs per project per hour (the API's limit: 100). */
  jobsPerProjectHour: number;
  job: UnitCost;
  /** One keeper per project: its cost per day. */
  keeperDay: UnitCost;
  /** Measured on this machine: what one worker process and one server node sustain. */
  workerCpuMsPerSecond: number;
  nodeTransitionsPerSecond: number;
  /** Workflow updates one history shard should carry per second (a planning ceiling, see docs/capacity.md). */
  shardTransitionsPerSecond: number;
  /** Grants one limiter workflow sustains per second (measured). */
  limiterGrantsPerSecond: number;
}

export interface FleetNeeds {
  jobsPerSecond: number;
  eventsPerSecond: number;
  actionsPerSecond: number;
  actionsPerMonth: number;
  tupleWritesPerSecond: number;
  walBytesPerSecond: number;
  workerCpuMsPerSecond: number;
  workerProcesses: number;
  serverNodes: number;
  historyShards: number;
  /** One project's limiter: its share of what one limiter workflow sustains. */
  limiterLoad: number;
}

/** Per second over the fleet: jobs at the full rate plus a keeper's day spread over its day. */
export function fleetNeeds(f: FleetInput): FleetNeeds {
  const jobs = (f.projects * f.jobsPerProjectHour) / 3600;
  const keepers = f.projects / 86_400;
  const rate = (k: keyof UnitCost): number => jobs * f.job[k] + keepers * f.keeperDay[k];
  const events = rate('events');
  const cpu = rate('workerCpuMs');
  return {
    jobsPerSecond: jobs,
    eventsPerSecond: events,
    actionsPerSecond: rate('actions'),
    actionsPerMonth: rate('actions') * 86_400 * 30,
    tupleWritesPerSecond: rate('tupleWrites'),
    walBytesPerSecond: rate('walBytes'),
    workerCpuMsPerSecond: cpu,
    workerProcesses: Math.ceil(cpu / f.workerCpuMsPerSecond),
    serverNodes: Math.ceil(events / f.nodeTransitionsPerSecond),
    // Shards are fixed when the cluster is created: a power of two with room for growth.
    historyShards: 2 ** Math.ceil(Math.log2(Math.max(1, events / f.shardTransitionsPerSecond))),
    limiterLoad: f.jobsPerProjectHour / 3600 / f.limiterGrantsPerSecond,
  };
}
