// From the capacity benchmark's measurements to the per-lifecycle table and the fleet arithmetic:
// which figures are measured (a run of that lifecycle on the cluster) and which derived (per-step
// costs measured here, step counts from the real polling policy or the keeper's schedule).
import { agentPollDelay } from '../../src/policies/polling';
import { refreshAtMs } from '../../src/policies/keeper-schedule';
import { NAIVE_POLL_MS } from '../naive-workflows';
import { agentPolls, fitLine, fleetNeeds, naivePolls, type FleetNeeds, type UnitCost } from './capacity-model';
import type { RowCost, RunCost } from './capacity-measure';
import type { PhaseResult, SideCost } from './capacity-phase';

/** A keeper's cost so far at three moments of its run. */
export interface KeeperSnapshots {
  installed?: { cost: RunCost; rows: RowCost };
  refreshed?: { cost: RunCost; rows: RowCost; refreshes: number };
  published?: { cost: RunCost; rows: RowCost; refreshes: number };
}

export interface ScalingRun {
  workers: number;
  /** Temporal server nodes serving the run (1 unless said). */
  serverNodes?: number;
  projects: number;
  jobs: number;
  wallMs: number;
  workerCpuS: number;
  events: number;
  createSpanMs: number;
  tupleWrites: number;
  walBytes: number;
  otherActions: number;
}

export interface LongRun {
  activeMs: number;
  product: RunCost;
  naive: RunCost;
  productCpuS: number;
  naiveCpuS: number;
}

/** One row of the per-lifecycle table. */
export interface Lifecycle extends UnitCost {
  name: string;
  impl: 'product' | 'naive';
  how: 'measured' | 'derived';
  /** Actions the server counted beyond the histories' (heartbeats, queries), per lifecycle. */
  serverExtraActions: number;
  historyNodeRows: number;
  historyNodeBytes: number;
  tasks: number;
  polls: number;
}

export const DAY_MS = 86_400_000;
/** The emulator's (and the API's) bundle link lifetime, and the keeper's refreshes a day at it. */
export const BUNDLE_TTL_MS = 3_600_000;
export const REFRESHES_PER_DAY = DAY_MS / (refreshAtMs(0, BUNDLE_TTL_MS) - 0);
/** An assumption: how often a deployment publishes in a day (each publish is one export). */
export const PUBLISHES_PER_DAY = 4;
export const LONG_AGENT_MS = 30 * 60_000;

type Steps = Pick<Lifecycle, 'events' | 'actions' | 'tasks' | 'historyNodeRows' | 'historyNodeBytes'>;
const STEP_KEYS = ['events', 'actions', 'tasks', 'historyNodeRows', 'historyNodeBytes'] as const;

const stepsOf = (c: RunCost & RowCost): Steps => ({
  events: c.events,
  actions: c.actions,
  tasks: c.tasks,
  historyNodeRows: c.historyNodeRows,
  historyNodeBytes: c.historyNodeBytes,
});

/** A lifecycle before its worker CPU is priced (cpuAtAgentRate, in lifecycleTable). */
type Priced = Omit<Lifecycle, 'workerCpuMs'>;

/** Steps priced with the side's phase: PostgreSQL writes per history transaction. */
function priced(side: SideCost, s: Steps, extra: Omit<Lifecycle, keyof Steps | keyof UnitCost>): Priced {
  return {
    ...s,
    ...extra,
    tupleWrites: (side.tupleWrites * s.historyNodeRows) / Math.max(1, side.historyNodeRows),
    walBytes: (side.walBytes * s.historyNodeRows) / Math.max(1, side.historyNodeRows),
  };
}

/** The side's shared runs (a project's limiter) spread over its lifecycles. */
function sharedShare(side: SideCost): Steps {
  const own = (k: keyof Steps) => side.each.reduce((s, c) => s + c[k], 0);
  const whole: Steps = {
    events: side.events,
    actions: side.actions,
    tasks: side.tasks,
    historyNodeRows: side.historyNodeRows,
    historyNodeBytes: side.historyNodeBytes,
  };
  return Object.fromEntries(STEP_KEYS.map((k) => [k, (whole[k] - own(k)) / side.lifecycles])) as Steps;
}

const add = (a: Steps, b: Steps, times = 1): Steps =>
  Object.fromEntries(STEP_KEYS.map((k) => [k, a[k] + times * b[k]])) as Steps;
const mean = (xs: Steps[]): Steps =>
  Object.fromEntries(STEP_KEYS.map((k) => [k, xs.reduce((s, x) => s + x[k], 0) / Math.max(1, xs.length)])) as Steps;

/** Agent jobs: the 2-minute runs as measured, 30 minutes from a straight line through every run vs its polls. */
function agentRows(side: SideCost, impl: Lifecycle['impl'], durationsMs: readonly number[]): Priced[] {
  const share = sharedShare(side);
  const extra = (side.serverActions - side.actions) / side.lifecycles;
  const twoMin = side.each.filter((_, i) => durationsMs[i] === 120_000);
  const measured = add(mean(twoMin.map(stepsOf)), share);
  const polls = (ms: number) => (impl === 'product' ? agentPolls(ms, agentPollDelay) : naivePolls(ms, NAIVE_POLL_MS));
  const fits = STEP_KEYS.map((k) => [k, fitLine(side.each.map((c) => ({ x: c.timers, y: c[k] })))] as const);
  const at = (x: number): Steps => add(Object.fromEntries(fits.map(([k, f]) => [k, f.a + f.b * x])) as Steps, share);
  const base = { impl, serverExtraActions: extra };
  return [
    priced(side, measured, {
      ...base,
      name: 'agent job, 2 min',
      how: 'measured',
      polls: twoMin.reduce((n, c) => n + c.timers, 0) / Math.max(1, twoMin.length),
    }),
    priced(side, at(polls(LONG_AGENT_MS)), {
      ...base,
      name: 'agent job, 30 min',
      how: 'derived',
      polls: polls(LONG_AGENT_MS),
    }),
  ];
}

function exportRow(side: SideCost, impl: Lifecycle['impl']): Priced {
  const steps = add(mean(side.each.map(stepsOf)), sharedShare(side));
  const polls = side.each.reduce((s, c) => s + c.timers, 0) / side.lifecycles;
  const extra = (side.serverActions - side.actions) / side.lifecycles;
  return priced(side, steps, { name: 'static export', impl, how: 'measured', serverExtraActions: extra, polls });
}

const snapSteps = (s: { cost: RunCost; rows: RowCost }): Steps => stepsOf({ ...s.cost, ...s.rows });

/** The product's keeper for a day: the first install, REFRESHES_PER_DAY refreshes, PUBLISHES_PER_DAY publishes. */
function productKeeperDay(side: SideCost, snaps: KeeperSnapshots): Priced | undefined {
  const { installed, refreshed, published } = snaps;
  if (!installed || !refreshed || !published) return undefined;
  const perRefresh = add(snapSteps(refreshed), snapSteps(installed), -1);
  const refreshes = Math.max(1, refreshed.refreshes);
  const oneRefresh = Object.fromEntries(STEP_KEYS.map((k) => [k, perRefresh[k] / refreshes])) as Steps;
  const perPublish = add(
    add(snapSteps(published), snapSteps(refreshed), -1),
    oneRefresh,
    -(published.refreshes - refreshed.refreshes),
  );
  const day = add(add(snapSteps(installed), oneRefresh, REFRESHES_PER_DAY), perPublish, PUBLISHES_PER_DAY);
  return priced(side, day, {
    name: "keeper's day",
    impl: 'product',
    how: 'derived',
    serverExtraActions: 0,
    polls: REFRESHES_PER_DAY,
  });
}

/** The naive keeper for a day: a check every 10 s (8,640) plus the refreshes, and a naive export per publish. */
function naiveKeeperDay(side: SideCost, naiveExport: Priced): Priced {
  const ticks = side.each[0]?.timers ?? 1;
  const perTick = Object.fromEntries(STEP_KEYS.map((k) => [k, side[k] / ticks])) as Steps;
  const checks = DAY_MS / NAIVE_POLL_MS + REFRESHES_PER_DAY;
  const day = add(
    Object.fromEntries(STEP_KEYS.map((k) => [k, perTick[k] * checks])) as Steps,
    naiveExport,
    PUBLISHES_PER_DAY,
  );
  return priced(side, day, {
    name: "keeper's day",
    impl: 'naive',
    how: 'derived',
    serverExtraActions: 0,
    polls: checks,
  });
}

export interface CapacityInput {
  phases: Record<string, PhaseResult>;
  snapshots: KeeperSnapshots;
  scaling: ScalingRun[];
  /** The one-worker scaling run with a second server node. */
  secondNode?: ScalingRun;
  limiter: ScalingRun;
  longRun?: LongRun;
  agentDurationsMs: readonly number[];
}

/**
 * Each row's worker CPU at its implementation's CPU per task in the agent phase: the export and keeper
 * phases cost a few hundred milliseconds, less than the idle worker's pollers spend in their minutes,
 * so their own reading (after the idle share is taken off) was mostly noise, often 0.
 */
function cpuAtAgentRate(row: Priced, agent: PhaseResult): Lifecycle {
  const side = row.impl === 'product' ? agent.product : agent.naive;
  return { ...row, workerCpuMs: (side.workerCpuMs * row.tasks) / Math.max(1, side.tasks) };
}

export function lifecycleTable(input: CapacityInput): Lifecycle[] {
  const { agent, export: exp, keeper } = input.phases as Record<'agent' | 'export' | 'keeper', PhaseResult>;
  const naiveExport = exportRow(exp.naive, 'naive');
  const rows: Priced[] = [
    ...agentRows(agent.product, 'product', input.agentDurationsMs),
    ...agentRows(agent.naive, 'naive', input.agentDurationsMs),
    exportRow(exp.product, 'product'),
    naiveExport,
    naiveKeeperDay(keeper.naive, naiveExport),
  ];
  const keeperDay = productKeeperDay(keeper.product, input.snapshots);
  if (keeperDay) rows.splice(rows.length - 1, 0, keeperDay);
  return rows.map((row) => cpuAtAgentRate(row, agent));
}

export interface FleetRow {
  projects: number;
  job: string;
  needs: FleetNeeds;
}

export interface CapacityReport {
  generatedAt: string;
  lifecycles: Lifecycle[];
  /** What this machine sustained (the scaling runs): per worker process, per server node, per shard. */
  measuredCeilings: {
    workerCpuMsPerSecond: number;
    nodeEventsPerSecond: number;
    shardEventsPerSecond: number;
    jobsPerSecond: number;
    tupleWritesPerSecond: number;
    limiterGrantsPerSecond: number;
  };
  fleet: FleetRow[];
  scaling: ScalingRun[];
  secondNode?: ScalingRun;
  limiter: ScalingRun;
  longRunCheck?: {
    activeMs: number;
    derived: Lifecycle[];
    measured: { impl: string; events: number; actions: number; polls: number }[];
  };
  /** Actions of other namespaces during the measured phases: 0 on a quiet machine. */
  otherLoad: Record<string, number>;
  historyShards: number;
}

/** What one process, one node (with its PostgreSQL) and one shard carried here at saturation. */
function ceilings(scaling: ScalingRun[], limiter: ScalingRun, shards: number): CapacityReport['measuredCeilings'] {
  const best = [...scaling].sort((a, b) => a.wallMs - b.wallMs)[0]!;
  const s = (r: ScalingRun) => r.wallMs / 1000;
  return {
    workerCpuMsPerSecond: Math.max(...scaling.map((r) => (1000 * r.workerCpuS) / r.workers / s(r))),
    nodeEventsPerSecond: best.events / s(best),
    shardEventsPerSecond: best.events / s(best) / shards,
    jobsPerSecond: best.jobs / s(best),
    tupleWritesPerSecond: best.tupleWrites / s(best),
    // A lower bound: the one-project run's own rate (when it matches the 15-project runs, the machine
    // bound it, not the limiter).
    limiterGrantsPerSecond: limiter.jobs / s(limiter),
  };
}

export function deriveReport(input: CapacityInput & { historyShards: number }): CapacityReport {
  const lifecycles = lifecycleTable(input);
  const c = ceilings(input.scaling, input.limiter, input.historyShards);
  const find = (name: string, impl: string) => lifecycles.find((l) => l.name === name && l.impl === impl)!;
  const keeperDay =
    lifecycles.find((l) => l.name === "keeper's day" && l.impl === 'product') ?? find("keeper's day", 'naive');
  const fleet: FleetRow[] = [];
  for (const projects of [1_000, 10_000])
    for (const [job, impl] of [
      ['agent job, 2 min', 'product'],
      ['agent job, 30 min', 'product'],
      ['agent job, 2 min', 'naive'],
    ] as const)
      fleet.push({
        projects,
        job: `${job} (${impl})`,
        needs: fleetNeeds({
          projects,
          jobsPerProjectHour: 100,
          job: find(job, impl),
          keeperDay: impl === 'product' ? keeperDay : find("keeper's day", 'naive'),
          workerCpuMsPerSecond: c.workerCpuMsPerSecond,
          nodeTransitionsPerSecond: c.nodeEventsPerSecond,
          shardTransitionsPerSecond: c.shardEventsPerSecond,
          limiterGrantsPerSecond: c.limiterGrantsPerSecond,
        }),
      });
  const lr = input.longRun;
  return {
    generatedAt: new Date().toISOString(),
    lifecycles,
    measuredCeilings: c,
    fleet,
    scaling: input.scaling,
    secondNode: input.secondNode,
    limiter: input.limiter,
    longRunCheck: lr && {
      activeMs: lr.activeMs,
      derived: lifecycles.filter((l) => l.name === 'agent job, 30 min'),
      measured: [
        { impl: 'product', events: lr.product.events, actions: lr.product.actions, polls: lr.product.timers },
        { impl: 'naive', events: lr.naive.events, actions: lr.naive.actions, polls: lr.naive.timers },
      ],
    },
    otherLoad: Object.fromEntries(Object.entries(input.phases).map(([k, p]) => [k, p.otherActions])),
    historyShards: input.historyShards,
  };
}
