// The capacity model, measured (docs/capacity.md): what each lifecycle costs on the production-shaped
// cluster (`npm run cluster`, 127.0.0.1:7633) on the path users take (worker processes of their own,
// workflows started by type name with plain JSON), next to the naive shape of the same job
// (bench/naive-workflows.ts), and what one more worker process and one more server node buy. `npx tsx bench/capacity.ts` runs it
// alone; `npm run bench -- --only capacity` as part of the benchmarks. About six minutes.
import { mkdtempSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { startEmulator, type EmulatorHandle } from '../emulator';
import { AdminApiClient } from '../src/api/client';
import { keeperStatusQuery, publishSignal, type KeeperStatus } from '../src/shared/bundle-keeper';
import { rateLimiterWorkflowId } from '../src/shared/rate-limiter';
import { WorkflowType } from '../src/shared/workflow-types';
import { WorkerProcess, mapLimit, readUsage } from '../test/chaos/helpers';
import {
  CAPACITY_NAMESPACE,
  CLUSTER,
  NAIVE_NAMESPACE,
  ensureNamespaces,
  fleetEnv,
  naiveWorkerOptions,
} from './lib/capacity-fleet';
import { idleCpuRate, runPhase, type PhasePlan, type PhaseResult, type Side } from './lib/capacity-phase';
import { psql } from '../scripts/cluster/postgres';
import { counterDelta, historyCost, readCounters, rowCost, type RunCost } from './lib/capacity-measure';
import { deriveReport, type CapacityReport, type KeeperSnapshots, type ScalingRun } from './lib/capacity-derive';
import { waitFor } from '../scripts/wait';
import { ensureCluster } from '../scripts/cluster/control';
import { runningNode, stopNodes } from '../scripts/cluster/nodes';
import { ownedShards } from '../scripts/cluster/status';
import { renderCapacityMarkdown } from './lib/capacity-report';

/**
 * Five of each: a handful of jobs costs less worker CPU than an idle worker's pollers spend in the
 * same two minutes, and the naive side read 0 after the idle share was taken off.
 */
const AGENT_DURATIONS_MS = Array.from({ length: 5 }, () => [30_000, 60_000, 120_000, 120_000]).flat();
const EXPORT_MS = 40_000;
const KEEPER_TTL_MS = 20_000;
const KEEPER_REFRESHES = 3;
const NAIVE_KEEPER_TICKS = 6;

interface Bench {
  emu: EmulatorHandle;
  tag: string;
  product: Side & { queue: string };
  naive: Side & { queue: string };
  connections: Connection[];
  log: (line: string) => void;
}

/** Durations by key: agent prompts and export domains carry theirs ("... [ms=120000]"). */
function durationFor(_kind: string, key: string): number | undefined {
  const m = /\[ms=(\d+)\]/.exec(key) ?? /^ms(\d+)-/.exec(key);
  return m ? Number(m[1]) : undefined;
}

async function startBench(log: (line: string) => void): Promise<Bench> {
  ensureNamespaces();
  const emu = await startEmulator({
    port: 0,
    durationFor,
    exportQueuedMs: 5_000,
    bundleTtlMs: KEEPER_TTL_MS,
    rateLimit: { limit: 1_000_000, windowMs: 3_600_000 },
  });
  const tag = `cap-${Date.now().toString(36)}`;
  const side = async (namespace: string, queue: string, worker: WorkerProcess) => {
    const connection = await Connection.connect({ address: CLUSTER });
    return { connection, side: { client: new Client({ connection, namespace }), worker, idleCpuPerSecond: 0, queue } };
  };
  const p = await side(
    CAPACITY_NAMESPACE,
    `${tag}-product`,
    await WorkerProcess.start({ env: fleetEnv(emu.url, `${tag}-product`) }),
  );
  const n = await side(
    NAIVE_NAMESPACE,
    `${tag}-naive`,
    await WorkerProcess.start(naiveWorkerOptions(emu.url, `${tag}-naive`)),
  );
  [p.side.idleCpuPerSecond, n.side.idleCpuPerSecond] = await Promise.all([
    idleCpuRate(p.side.worker),
    idleCpuRate(n.side.worker),
  ]);
  log(
    `capacity: workers up; idle CPU ${p.side.idleCpuPerSecond.toFixed(3)} / ${n.side.idleCpuPerSecond.toFixed(3)} s/s`,
  );
  return { emu, tag, product: p.side, naive: n.side, connections: [p.connection, n.connection], log };
}

function agentPlan(b: Bench): PhasePlan {
  const project = `${b.tag}-agents`;
  const prompt = (i: number, ms: number) => `Capacity job ${i} (${b.tag}) [ms=${ms}]`;
  const start = (type: string, queue: string, suffix: string) => async (client: Client) => {
    const handles = await Promise.all(
      AGENT_DURATIONS_MS.map((ms, i) =>
        client.workflow.start(type, {
          taskQueue: queue,
          workflowId: `${b.tag}-${suffix}-agent-${i}`,
          args: [{ projectId: project, prompt: prompt(i, ms) }],
        }),
      ),
    );
    const shared = suffix === 'product' ? [rateLimiterWorkflowId(project)] : [];
    return { groups: handles.map((h) => [h.workflowId]), shared, done: Promise.all(handles.map((h) => h.result())) };
  };
  return {
    product: start(WorkflowType.agentJob, b.product.queue, 'product'),
    naive: start('naiveAgent', b.naive.queue, 'naive'),
  };
}

function exportPlan(b: Bench, count = 8): PhasePlan {
  const start = (type: string, queue: string, suffix: string) => async (client: Client) => {
    const handles = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        client.workflow.start(type, {
          taskQueue: queue,
          workflowId: `${b.tag}-${suffix}-export-${i}`,
          args: [{ domain: `ms${EXPORT_MS}-${suffix}${i}-${b.tag}.docs.example.com` }],
        }),
      ),
    );
    return {
      groups: handles.map((h) => [h.workflowId]),
      shared: [],
      done: Promise.all(handles.map((h) => h.result())),
    };
  };
  return {
    product: start(WorkflowType.staticExport, b.product.queue, 'product'),
    naive: start('naiveExport', b.naive.queue, 'naive'),
  };
}

/** The keeper: its cost after the first install, after KEEPER_REFRESHES refreshes, after one publish. */
function keeperPlan(b: Bench, snapshots: KeeperSnapshots): PhasePlan {
  const sinkDir = mkdtempSync(path.join(os.tmpdir(), 'capacity-keeper-'));
  const product = async (client: Client) => {
    const workflowId = `${b.tag}-keeper`;
    const handle = await client.workflow.start(WorkflowType.bundleKeeper, {
      taskQueue: b.product.queue,
      workflowId,
      args: [
        {
          domain: `ms5000-keeper-${b.tag}.docs.example.com`,
          sink: { type: 'file', path: path.join(sinkDir, 'config.json') },
        },
      ],
    });
    const snap = async () => {
      const cost = await historyCost(client, [workflowId]);
      return { cost, rows: rowCost(cost.runs.map((r) => r.runId)) };
    };
    const until = async (what: string, ok: (s: KeeperStatus) => boolean) => {
      await waitFor(async () => ok(await handle.query(keeperStatusQuery)), {
        timeoutMs: 180_000,
        intervalMs: 1_000,
        what,
      });
    };
    const done = (async () => {
      await until('the first install', (s) => s.exportsDone >= 1 && s.jobId !== null);
      snapshots.installed = await snap();
      await until('the refreshes', (s) => s.refreshesDone >= KEEPER_REFRESHES);
      snapshots.refreshed = { ...(await snap()), refreshes: (await handle.query(keeperStatusQuery)).refreshesDone };
      await handle.signal(publishSignal);
      await until('the export after a publish', (s) => s.exportsDone >= 2);
      snapshots.published = { ...(await snap()), refreshes: (await handle.query(keeperStatusQuery)).refreshesDone };
      await handle.terminate('capacity benchmark: measured');
    })();
    return { groups: [[workflowId]], shared: [], done };
  };
  const naive = async (client: Client) => {
    const api = new AdminApiClient({ baseUrl: b.emu.url, apiKey: 'mint_bench_capacity_key' });
    const job = await api.startExport({ domain: `ms1000-naive-keeper-${b.tag}.docs.example.com` });
    await api.close();
    const handle = await client.workflow.start('naiveKeeper', {
      taskQueue: b.naive.queue,
      workflowId: `${b.tag}-naive-keeper`,
      args: [{ jobId: job.jobId, ticks: NAIVE_KEEPER_TICKS }],
    });
    return { groups: [[handle.workflowId]], shared: [], done: handle.result() };
  };
  return { product, naive };
}

/** A burst of short agent jobs over `projects` projects on `workers` product worker processes. */
async function scalingRun(
  b: Bench,
  workers: number,
  jobs: number,
  projects: number,
  serverNodes = 1,
): Promise<ScalingRun> {
  const queue = `${b.tag}-scale${workers}-${projects}-n${serverNodes}`;
  const env = fleetEnv(b.emu.url, queue, { AGENT_RATE_LIMIT: '1000000/1h' });
  const fleet: WorkerProcess[] = [];
  for (let i = 0; i < workers; i++) fleet.push(await WorkerProcess.start({ env }));
  try {
    const m0 = await readCounters(CAPACITY_NAMESPACE);
    const cpu0 = fleet.map((w) => readCpu(w));
    const client = b.product.client;
    const started = Date.now();
    const handles = await mapLimit(
      Array.from({ length: jobs }, (_, i) => i),
      50,
      (i) =>
        client.workflow.start(WorkflowType.agentJob, {
          taskQueue: queue,
          workflowId: `${queue}-${i}`,
          args: [{ projectId: `${queue}-p${i % projects}`, prompt: `Scale job ${i} ${queue} [ms=2000]` }],
        }),
    );
    await Promise.all(handles.map((h) => h.result()));
    const wallMs = Date.now() - started;
    const cpuS = fleet.reduce((s, w, i) => s + readCpu(w) - cpu0[i]!, 0);
    const machine = counterDelta(m0, await readCounters(CAPACITY_NAMESPACE));
    const costs = await mapLimit(handles, 10, (h) => historyCost(client, [h.workflowId]));
    const creates = b.emu
      .jobs()
      .filter((j) => j.prompt.includes(queue))
      .map((j) => Date.parse(j.createdAt));
    return {
      workers,
      serverNodes,
      projects,
      jobs,
      wallMs,
      workerCpuS: cpuS,
      events: costs.reduce((s, c: RunCost) => s + c.events, 0),
      createSpanMs: Math.max(...creates) - Math.min(...creates),
      tupleWrites: machine.tupleWrites,
      walBytes: machine.walBytes,
      otherActions: machine.otherActions,
    };
  } finally {
    await Promise.all(fleet.map((w) => w.kill('SIGTERM')));
  }
}

const readCpu = (w: WorkerProcess): number => readUsage(w.pid)?.cpuSeconds ?? 0;

/**
 * The one-worker burst again with a second server node sharing PostgreSQL (started for the run when it
 * was down, and stopped after): what one more node buys on this machine.
 */
async function secondNodeRun(b: Bench): Promise<ScalingRun> {
  const wasUp = runningNode(2) !== undefined;
  await ensureCluster({ nodes: 2 });
  try {
    await waitFor(async () => ((await ownedShards(2)) ?? 0) > 0, {
      timeoutMs: 120_000,
      intervalMs: 200,
      what: 'node 2 to own history shards',
    });
    return await scalingRun(b, 1, 150, 15, 2);
  } finally {
    if (!wasUp) await stopNodes();
  }
}

export async function runCapacityBenchmark(log: (line: string) => void = console.log): Promise<CapacityReport> {
  const b = await startBench(log);
  const snapshots: KeeperSnapshots = {};
  const phases: Record<string, PhaseResult> = {};
  try {
    log('capacity: agent jobs (30 s to 2 min), product and naive side by side');
    phases.agent = await runPhase(b.product, b.naive, agentPlan(b));
    log('capacity: static exports');
    phases.export = await runPhase(b.product, b.naive, exportPlan(b));
    log('capacity: keepers');
    phases.keeper = await runPhase(b.product, b.naive, keeperPlan(b, snapshots));
    await Promise.all([b.product.worker.kill('SIGTERM'), b.naive.worker.kill('SIGTERM')]);
    const scaling: ScalingRun[] = [];
    for (const workers of [1, 2]) {
      log(`capacity: 150 short agent jobs over 15 projects, ${workers} worker process(es)`);
      scaling.push(await scalingRun(b, workers, 150, 15));
    }
    log('capacity: 150 short agent jobs over 15 projects, 1 worker process, 2 server nodes');
    const secondNode = await secondNodeRun(b);
    log('capacity: one project, 150 jobs through one limiter workflow');
    const limiter = await scalingRun(b, 1, 150, 1);
    const [shards] = psql('temporal', 'SELECT count(*) FROM shards');
    return deriveReport({
      phases,
      snapshots,
      scaling,
      secondNode,
      limiter,
      longRun: await longRunCheck(b),
      agentDurationsMs: AGENT_DURATIONS_MS,
      historyShards: Number(shards![0]),
    });
  } finally {
    await Promise.all([b.product.worker.kill('SIGTERM'), b.naive.worker.kill('SIGTERM')]);
    await Promise.all(b.connections.map((c) => c.close()));
    await b.emu.close();
  }
}

/** The real long agent job of bench/capacity-long.ts, when it has run: its histories, to check the derivation. */
async function longRunCheck(b: Bench) {
  try {
    const run = JSON.parse(readFileSync(path.join(__dirname, 'results', 'capacity-long-run.json'), 'utf8'));
    const product = await historyCost(b.product.client, [
      run.ours.workflowId,
      rateLimiterWorkflowId(run.ours.projectId),
    ]);
    const naiveClient = run.naive.namespace === NAIVE_NAMESPACE ? b.naive.client : b.product.client;
    const naive = await historyCost(naiveClient, [run.naive.workflowId]);
    return {
      activeMs: run.activeMs as number,
      product,
      naive,
      productCpuS: run.ours.workerCpuS as number,
      naiveCpuS: run.naive.workerCpuS as number,
    };
  } catch {
    return undefined;
  }
}

/** Runs the benchmark and writes capacity.{json,md} into `out`; returns the report and its Markdown. */
export async function writeCapacityReport(out: string): Promise<{ report: CapacityReport; markdown: string }> {
  const report = await runCapacityBenchmark((line) => process.stderr.write(`${line}\n`));
  const markdown = renderCapacityMarkdown(report);
  await writeFile(path.join(out, 'capacity.json'), `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(path.join(out, 'capacity.md'), markdown);
  return { report, markdown };
}

if (require.main === module) {
  writeCapacityReport(path.join(__dirname, 'results'))
    .then(({ markdown }) => console.log(markdown))
    .catch((err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    });
}
