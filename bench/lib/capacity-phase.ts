// One phase of the capacity benchmark: lifecycles of the product and of the naive shape, each on its
// own worker process and namespace, run side by side; what each side cost, attributed to its own runs
// (histories, rows), its own process (CPU) and its own namespace (the server's action metric). The
// machine-wide PostgreSQL figures (tuple writes, WAL) are split between the sides by their share of
// history_node rows (one per history transaction).
import type { Client } from '@temporalio/client';
import { readUsage, type WorkerProcess } from '../../test/chaos/helpers';
import { CAPACITY_NAMESPACE, NAIVE_NAMESPACE } from './capacity-fleet';
import {
  counterDelta,
  historyCost,
  readCounters,
  rowCost,
  type MachineCounters,
  type RowCost,
  type RunCost,
} from './capacity-measure';

export interface Side {
  client: Client;
  worker: WorkerProcess;
  /** CPU seconds per second the idle worker process spends (pollers, timers): subtracted. */
  idleCpuPerSecond: number;
}

export interface SideCost {
  lifecycles: number;
  events: number;
  /** Counted from the histories by the published rules. */
  actions: number;
  /** The server's own `action` counter for the side's namespace (adds heartbeats and queries). */
  serverActions: number;
  tasks: number;
  timers: number;
  historyNodeRows: number;
  historyNodeBytes: number;
  stateRows: number;
  tupleWrites: number;
  walBytes: number;
  workerCpuMs: number;
  /** Each lifecycle's own figures (for the fits against polls). */
  each: (RunCost & RowCost)[];
}

export interface PhaseResult {
  wallMs: number;
  product: SideCost;
  naive: SideCost;
  /** Actions of other namespaces meanwhile: 0 on a quiet machine; else the PostgreSQL split is noisy. */
  otherActions: number;
}

const cpuSeconds = (w: WorkerProcess): number => readUsage(w.pid)?.cpuSeconds ?? 0;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An idle worker's CPU rate, over `ms`, after `settleMs` (its first seconds still compile and connect). */
export async function idleCpuRate(worker: WorkerProcess, ms = 10_000, settleMs = 5_000): Promise<number> {
  await pause(settleMs);
  const before = cpuSeconds(worker);
  await pause(ms);
  return (cpuSeconds(worker) - before) / (ms / 1000);
}

/** What a side's runs cost: lifecycles are groups of workflow ids (a job, its limiter share...). */
async function sideCost(
  client: Client,
  groups: string[][],
  shared: string[],
): Promise<Omit<SideCost, 'serverActions' | 'tupleWrites' | 'walBytes' | 'workerCpuMs'>> {
  const each: (RunCost & RowCost)[] = [];
  for (const ids of groups) {
    const cost = await historyCost(client, ids);
    each.push({ ...cost, ...rowCost(cost.runs.map((r) => r.runId)) });
  }
  const all: RunCost[] = [...each, ...(shared.length > 0 ? [await historyCost(client, shared)] : [])];
  const rows = rowCost(all.flatMap((c) => c.runs.map((r) => r.runId)));
  const sum = (k: 'events' | 'actions' | 'tasks' | 'timers') => all.reduce((s, c) => s + c[k], 0);
  return {
    lifecycles: groups.length,
    events: sum('events'),
    actions: sum('actions'),
    tasks: sum('tasks'),
    timers: sum('timers'),
    ...rows,
    each,
  };
}

export interface PhasePlan {
  /** Starts the side's lifecycles; resolves to their workflow ids (one group each) and shared ids (limiters). */
  product: (client: Client) => Promise<{ groups: string[][]; shared: string[]; done: Promise<unknown> }>;
  naive: (client: Client) => Promise<{ groups: string[][]; shared: string[]; done: Promise<unknown> }>;
}

export async function runPhase(product: Side, naive: Side, plan: PhasePlan): Promise<PhaseResult> {
  const [m0p, m0n] = [await readCounters(CAPACITY_NAMESPACE), await readCounters(NAIVE_NAMESPACE)];
  const cpu0 = [cpuSeconds(product.worker), cpuSeconds(naive.worker)];
  const started = Date.now();
  const [p, n] = await Promise.all([plan.product(product.client), plan.naive(naive.client)]);
  await Promise.all([p.done, n.done]);
  const wallMs = Date.now() - started;
  const cpu1 = [cpuSeconds(product.worker), cpuSeconds(naive.worker)];
  await pause(1_500); // pg_stat counters are flushed about once a second
  const [m1p, m1n] = [await readCounters(CAPACITY_NAMESPACE), await readCounters(NAIVE_NAMESPACE)];
  const [dp, dn] = [counterDelta(m0p, m1p), counterDelta(m0n, m1n)];
  const pc = await sideCost(product.client, p.groups, p.shared);
  const nc = await sideCost(naive.client, n.groups, n.shared);
  const share = pc.historyNodeRows / Math.max(1, pc.historyNodeRows + nc.historyNodeRows);
  const finish = (c: typeof pc, d: MachineCounters, s: Side, cpu: number, part: number): SideCost => ({
    ...c,
    serverActions: d.actions,
    tupleWrites: dp.tupleWrites * part,
    walBytes: dp.walBytes * part,
    workerCpuMs: Math.max(0, cpu - s.idleCpuPerSecond * (wallMs / 1000)) * 1000,
  });
  return {
    wallMs,
    product: finish(pc, dp, product, cpu1[0]! - cpu0[0]!, share),
    naive: finish(nc, dn, naive, cpu1[1]! - cpu0[1]!, 1 - share),
    otherActions: dp.otherActions - dn.actions,
  };
}
