// Renders the capacity benchmark's report (bench/capacity.ts) as Markdown: the per-lifecycle table,
// what this machine sustained, the fleet arithmetic, the worker scaling and the long-run check.
import type { FleetRow } from './capacity-derive';
import {
  PUBLISHES_PER_DAY,
  REFRESHES_PER_DAY,
  type CapacityReport,
  type Lifecycle,
  type ScalingRun,
} from './capacity-derive';

const f = (n: number, digits = 0): string =>
  Number.isFinite(n)
    ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : 'n/a';
const kib = (bytes: number): string => f(bytes / 1024, 1);

function lifecycleTable(rows: readonly Lifecycle[]): string[] {
  return [
    '| lifecycle | implementation | how | polls / checks | history events | actions (histories) | + server-counted (heartbeats, queries) | history_node rows / KiB | PostgreSQL tuple writes | WAL KiB | worker CPU ms |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (l) =>
        `| ${l.name} | ${l.impl} | ${l.how} | ${f(l.polls, 1)} | ${f(l.events)} | ${f(l.actions)} | ${f(l.serverExtraActions, 1)} | ${f(l.historyNodeRows)} / ${kib(l.historyNodeBytes)} | ${f(l.tupleWrites)} | ${kib(l.walBytes)} | ${f(l.workerCpuMs)} |`,
    ),
  ];
}

function fleetTable(rows: readonly FleetRow[]): string[] {
  return [
    '| projects | job | jobs/s | history events/s | actions/s | actions/month | PostgreSQL tuple writes/s | WAL MiB/s | worker CPU cores | worker processes | server nodes | history shards | one limiter at 100/h |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      ({ projects, job, needs: n }) =>
        `| ${f(projects)} | ${job} | ${f(n.jobsPerSecond, 1)} | ${f(n.eventsPerSecond)} | ${f(n.actionsPerSecond)} | ${f(n.actionsPerMonth / 1e6, 0)} M | ${f(n.tupleWritesPerSecond)} | ${f(n.walBytesPerSecond / 2 ** 20, 1)} | ${f(n.workerCpuMsPerSecond / 1000, 1)} | ${f(n.workerProcesses)} | ${f(n.serverNodes)} | ${f(n.historyShards)} | ${f(n.limiterLoad * 100, 3)} % |`,
    ),
  ];
}

function scalingTable(r: CapacityReport): string[] {
  const runs: [string, ScalingRun][] = [
    ...r.scaling.map((s): [string, ScalingRun] => ['scaling', s]),
    ...(r.secondNode ? [['second node', r.secondNode] as [string, ScalingRun]] : []),
    ['one limiter', r.limiter],
  ];
  return [
    "| run | worker processes | server nodes | projects | jobs | wall (s) | jobs/s | worker CPU (s) | history events/s | PostgreSQL tuple writes/s | other namespaces' actions meanwhile |",
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...runs.map(
      ([run, s]) =>
        `| ${run} | ${s.workers} | ${s.serverNodes ?? 1} | ${s.projects} | ${s.jobs} | ${f(s.wallMs / 1000, 1)} | ${f(jobsPerSecond(s), 1)} | ${f(s.workerCpuS, 1)} | ${f(s.events / (s.wallMs / 1000))} | ${f(s.tupleWrites / (s.wallMs / 1000))} | ${f(s.otherActions)} |`,
    ),
  ];
}

const jobsPerSecond = (s: ScalingRun): number => s.jobs / (s.wallMs / 1000);

/** What one more worker process and one more server node bought here, from the scaling runs. */
export function oneMoreLine(r: Pick<CapacityReport, 'scaling' | 'secondNode'>): string {
  const one = r.scaling.find((s) => s.workers === 1);
  const two = r.scaling.find((s) => s.workers === 2);
  if (!one) return '';
  const change = (s: ScalingRun | undefined) =>
    s
      ? `${f(jobsPerSecond(one), 1)} → ${f(jobsPerSecond(s), 1)} jobs/s (${f(jobsPerSecond(s) / jobsPerSecond(one), 2)}x)`
      : 'not measured';
  return `What one more bought on this machine, for the burst above: a worker process ${change(two)}; a server node ${change(r.secondNode)}. Both share the same 2 cores with the server, PostgreSQL and each other, so neither adds CPU here; on hosts of their own, each adds its own ceiling.`;
}

function longRunLines(r: CapacityReport): string[] {
  const c = r.longRunCheck;
  if (!c) return ['No real long run recorded (`npx tsx bench/capacity-long.ts` runs one, 30 min).'];
  return [
    `A real agent job of ${f(c.activeMs / 60_000)} min (bench/capacity-long.ts, its limiter included) against the derived 30-minute row:`,
    '',
    '| implementation | derived events / actions / polls | real events / actions / polls |',
    '|---|---:|---:|',
    ...c.measured.map((m) => {
      const d = c.derived.find((l) => l.impl === m.impl)!;
      return `| ${m.impl} | ${f(d.events)} / ${f(d.actions)} / ${f(d.polls)} | ${f(m.events)} / ${f(m.actions)} / ${f(m.polls)} |`;
    }),
  ];
}

export function renderCapacityMarkdown(r: CapacityReport): string {
  const c = r.measuredCeilings;
  return [
    '# Capacity model',
    '',
    '`bench/capacity.ts` on the production-shaped cluster (its own namespaces; product and naive side by side, each on its own worker process).',
    `Keeper's day: ${f(REFRESHES_PER_DAY, 1)} refreshes (1 h links) and ${PUBLISHES_PER_DAY} publishes. Other namespaces' actions during the phases (0 on a quiet machine): ${Object.entries(
      r.otherLoad,
    )
      .map(([k, v]) => `${k} ${f(v)}`)
      .join(', ')}.`,
    '',
    ...lifecycleTable(r.lifecycles),
    '',
    `Measured ceilings on this machine (${r.historyShards} history shards, one server node): ${f(c.jobsPerSecond, 1)} short agent jobs/s, ${f(c.nodeEventsPerSecond)} history events/s (${f(c.shardEventsPerSecond)} per shard), ${f(c.tupleWritesPerSecond)} PostgreSQL tuple writes/s, ${f(c.workerCpuMsPerSecond)} worker CPU ms/s per process, at least ${f(c.limiterGrantsPerSecond, 1)} grants/s through one limiter workflow (the one-project run's own rate).`,
    '',
    ...scalingTable(r),
    '',
    oneMoreLine(r),
    '',
    ...fleetTable(r.fleet),
    '',
    ...longRunLines(r),
    '',
  ].join('\n');
}
