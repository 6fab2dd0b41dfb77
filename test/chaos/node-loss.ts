// The node-loss scenario: a cluster of two server nodes (`npm run cluster -- --nodes 2`) loses the
// node its clients do not use (node 2, SIGKILL: a lost host) in the middle of a mixed burst (exports,
// agent jobs under a tight per-project limit, a keeper refreshing short links), then gets it back.
// Node 2's history shards and task queue partitions move to node 1, and back when it returns. Every
// lifecycle completes, no agent job is created twice, no create is refused with 429, and the keeper
// applies only links that download. Measured: how long the shards took to move (node 1's
// numshards_gauge, and a describe of a missing workflow on each shard answering again), and what the
// lifecycles in flight lost (the silence in their histories across the kill, against the same measure
// taken before it). Only on the cluster: a dev server has one node.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import { ensureCluster } from '../../scripts/cluster/control';
import { killNode, runningNode } from '../../scripts/cluster/nodes';
import { recordedHistoryShards } from '../../scripts/cluster/shards';
import { ownedShards } from '../../scripts/cluster/status';
import { startEmulator, type EmulatorHandle } from '../../emulator';
import { publish } from '../../src/client';
import { keeperStatusQuery } from '../../src/shared/bundle-keeper';
import { clusterSkipReason } from '../helpers/temporal';
import { checkOutcomes, connect, secretKey, settle, until, type WorkerProcess } from './helpers';
import {
  allIds,
  assertKeyNowhere,
  assertOutcome,
  expiredPermits,
  keepingEvidence,
  loadFigures,
  type LoadFigures,
  type ScenarioSize,
  startFleet,
  startWatchedKeeper,
  chaosSinksFile,
  watchedKeeperDomain,
  sum,
  unreportedUses,
  untilKillMoment,
  workerLogs,
} from './scenarios';
import { chaosServer, type ChaosServer } from './target';

export interface NodeLossOptions extends ScenarioSize {
  workers: number;
  taskQueue: string;
}

/** Progress lines with the time since the scenario began (a slow phase shows where). */
let began = Date.now();
const phase = (what: string) => console.log(`node loss +${((Date.now() - began) / 1000).toFixed(1)}s: ${what}`);

/** Node 2 running again if a run left it down (a test's after(): a timed-out test skips its finally). */
export async function restoreNode2(): Promise<void> {
  if (!runningNode(2)) await ensureCluster({ nodes: 2 });
}

/** Seconds, one decimal. */
const s = (ms: number) => Number((ms / 1000).toFixed(1));
const PROBES = 32;

export interface ShardMove {
  /** History shards of the cluster, and node 2's before the kill. */
  total: number;
  node2Before: number;
  /** Kill until node 1 owned every shard (its numshards_gauge). */
  shardsMovedS: number;
  /** Kill until a describe of a missing workflow answered on each of PROBES ids (every shard, almost surely). */
  probesAnsweredS: number;
}

/**
 * Node 2 up (started if down) and owning shards, the ring settled: the two nodes' shares add up to the
 * cluster's shard count. Mid-rebalance they may not (one run read 4 + 2 of 4 shards, and then waited for
 * node 1 to own 6), so the kill must take shards away from a settled ring.
 */
async function twoNodes(): Promise<{ total: number; node2: number }> {
  await ensureCluster({ nodes: 2 });
  const total = recordedHistoryShards();
  let shares: [number | undefined, number | undefined] = [undefined, undefined];
  await until(
    async () => {
      shares = [await ownedShards(1), await ownedShards(2)];
      return (shares[1] ?? 0) > 0 && (shares[0] ?? 0) + shares[1]! === total;
    },
    `node 2 to own history shards, the two nodes ${total} in all`,
    60_000,
    200,
  );
  return { total, node2: shares[1]! };
}

/** When a describe of `workflowId` (no such workflow) gets an answer: NotFound from the shard's owner. */
async function probeAnswered(client: Client, workflowId: string, deadline: number): Promise<number> {
  const { connection } = client;
  for (;;) {
    try {
      await connection.withDeadline(Date.now() + 2_000, () =>
        connection.workflowService.describeWorkflowExecution({ namespace: 'default', execution: { workflowId } }),
      );
      return Date.now();
    } catch (err) {
      if ((err as { code?: number }).code === 5) return Date.now();
      if (Date.now() > deadline) throw new Error(`the probe ${workflowId} got no answer`, { cause: err });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

async function probeAll(client: Client, tag: string, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  const ids = Array.from({ length: PROBES }, (_, i) => `node-loss-probe-${tag}-${i}`);
  return Math.max(...(await Promise.all(ids.map((id) => probeAnswered(client, id, deadline)))));
}

/** SIGKILLs node 2 and measures how long its shards take to move to node 1. */
async function killAndMeasure(client: Client, tag: string, total: number, node2Before: number): Promise<ShardMove> {
  const killedAt = Date.now();
  await killNode(2);
  const [movedAt, probedAt] = await Promise.all([
    until(
      async () => ((await ownedShards(1)) === total ? Date.now() : undefined),
      'node 1 to own every shard',
      120_000,
      100,
    ),
    probeAll(client, tag, 120_000),
  ]);
  return {
    total,
    node2Before,
    shardsMovedS: s(movedAt - killedAt),
    probesAnsweredS: s(probedAt - killedAt),
  };
}

/** Node 2 started again; seconds until it serves, and until it owns shards again. */
async function bringBack(): Promise<{ backS: number; rebalancedS: number }> {
  const at = Date.now();
  const ensured = await ensureCluster({ nodes: 2 });
  assert.deepEqual(ensured.startedNodes, [2], 'node 2 was started again');
  const backS = s(Date.now() - at);
  await until(async () => ((await ownedShards(2)) ?? 0) > 0, 'node 2 to own shards again', 120_000, 100);
  return { backS, rebalancedS: s(Date.now() - at) };
}

export interface Silences {
  /** Lifecycles in flight at the moment measured. */
  inFlight: number;
  p50S: number;
  maxS: number;
}

/**
 * For each lifecycle in flight at `atMs`, the silence in its history across that moment (from the last
 * event before it to the first after): what a lifecycle lost there, over what it waits anyway (the same
 * measure at a moment before the kill).
 */
async function silencesAt(client: Client, ids: readonly string[], moments: number[]): Promise<Silences[]> {
  const histories = await Promise.all(
    ids.map(async (id) => {
      const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
      return events.map((e) => tsToMs(e.eventTime));
    }),
  );
  return moments.map((at) => {
    const gaps = histories
      .map((times) => {
        const next = times.findIndex((t) => t > at);
        return next > 0 ? times[next]! - times[next - 1]! : undefined;
      })
      .filter((gap): gap is number => gap !== undefined)
      .sort((a, b) => a - b);
    const p50 = gaps[Math.floor(gaps.length / 2)] ?? 0;
    return { inFlight: gaps.length, p50S: s(p50), maxS: s(gaps.at(-1) ?? 0) };
  });
}

export interface NodeLossFigures extends LoadFigures, ShardMove {
  server: string;
  lifecycles: number;
  createsAtKill: number;
  exportsAtKill: number;
  backS: number;
  rebalancedS: number;
  /** Silences of the lifecycles in flight: 3 s before the kill, at the kill, at the node's return. */
  silenceBefore: Silences;
  silenceAtKill: Silences;
  silenceAtReturn: Silences;
  keeperApplied: number;
  keeperBroken: number;
  unreportedUses: number;
  expiredPermits: number;
}

/** The emulator of the run: a tight per-project limit, short bundle links (the keeper refreshes every 6 s). */
const nodeLossEmulator = (o: NodeLossOptions) =>
  startEmulator({
    agentActiveMs: 3_000,
    exportQueuedMs: 500,
    exportDurationMs: 4_000,
    bundleTtlMs: 12_000,
    rateLimit: o.rate,
    retryAfterForm: 'none',
  });

/** What the burst left to check: the lifecycles, the keeper's links, the moments and the measures. */
interface BurstRun {
  fleet: Awaited<ReturnType<typeof startFleet>>;
  applied: Awaited<ReturnType<typeof startWatchedKeeper>>['applied'];
  keeperId: string;
  atKill: { creates: number; exports: number };
  killedAt: number;
  returnedAt: number;
  move: ShardMove;
  back: { backS: number; rebalancedS: number };
}

/** The burst with its keeper; node 2 killed mid-burst, its shards' move measured, node 2 brought back. */
async function burstWithNodeLoss(
  server: ChaosServer,
  client: Client,
  emulator: EmulatorHandle,
  ctx: { key: string; dir: string; workers: WorkerProcess[]; keeperStarted: (id: string) => void },
  o: NodeLossOptions,
): Promise<BurstRun> {
  began = Date.now();
  const shards = await twoNodes();
  phase(`node 2 owns ${shards.node2} of ${shards.total} shards`);
  const tag = Date.now().toString(36);
  assert.ok((await probeAll(client, `${tag}-warm`, 20_000)) > 0, 'the probes answer with both nodes up');
  const keeperDomain = watchedKeeperDomain();
  const sinksFile = await chaosSinksFile(ctx.dir, keeperDomain);
  const fleet = await startFleet(server, client, emulator, ctx.key, o, 'node-loss', ctx.workers, sinksFile);
  phase(`${o.workers} worker process(es) up, ${o.lifecycles} lifecycles started`);
  const { keeper, domain, applied } = await startWatchedKeeper(client, o.taskQueue, ctx.dir, keeperDomain);
  ctx.keeperStarted(keeper.workflowId);
  phase('keeper started');
  await untilKillMoment(emulator, 'mid-burst', fleet.agents, fleet.half);
  await publish(client, domain);
  phase('killing node 2');
  const atKill = { creates: sum(emulator.counters().agentJobsCreated), exports: emulator.counters().exportsStarted };
  const killedAt = Date.now();
  const move = await killAndMeasure(client, tag, shards.total, shards.node2);
  phase(`shards moved: ${JSON.stringify(move)}`);
  const returnedAt = Date.now();
  const back = await bringBack();
  phase(`node 2 back: ${JSON.stringify(back)}`);
  return { fleet, applied, keeperId: keeper.workflowId, atKill, killedAt, returnedAt, move, back };
}

/** What the keeper does and waits for (its status, its pending activities): for a failure's message. */
async function keeperState(client: Client, keeperId: string): Promise<string> {
  const handle = client.workflow.getHandle(keeperId);
  // Without the link itself: a presigned link stays out of logs, a test's too.
  const status = await handle.query(keeperStatusQuery).then(
    ({ bundleUrl, ...rest }) => ({ ...rest, hasLink: bundleUrl !== null }),
    (err: Error) => `query failed: ${err.message}`,
  );
  const { raw } = await handle.describe();
  const pending = (raw.pendingActivities ?? []).map((a) => ({
    type: a.activityType?.name,
    state: a.state,
    attempt: a.attempt,
    lastFailure: a.lastFailure?.message,
  }));
  return `keeper status ${JSON.stringify(status)}; pending activities ${JSON.stringify(pending)}`;
}

/** Settles the run's lifecycles and the keeper's links; the figures, printed. */
async function settleAndMeasure(
  server: ChaosServer,
  client: Client,
  emulator: EmulatorHandle,
  workers: WorkerProcess[],
  o: NodeLossOptions,
  run: BurstRun,
) {
  const { fleet, applied } = run;
  const ids = allIds(fleet.lifecycles);
  const settled = await settle(client, ids, {
    operator: { agents: fleet.lifecycles.agents, jobs: () => emulator.jobs() },
  });
  const completeS = (Math.max(...settled.map((x) => x.atMs)) - fleet.startedAt) / 1000;
  phase('every lifecycle settled');
  await until(() => applied.length >= 3, 'the keeper to apply three links', 60_000).catch(async (err: Error) => {
    throw new Error(`${err.message}; ${applied.length} applied; ${await keeperState(client, run.keeperId)}`);
  });
  await applied.stop();
  const [before, atKill, atReturn] = await silencesAt(client, ids, [
    run.killedAt - 3_000,
    run.killedAt,
    run.returnedAt,
  ]);
  const outcome = checkOutcomes(fleet.lifecycles, settled, emulator.jobs());
  const logs = Object.values(workerLogs(workers));
  const figures: NodeLossFigures = {
    server: `${server.label}, 2 nodes`,
    lifecycles: o.lifecycles,
    createsAtKill: run.atKill.creates,
    exportsAtKill: run.atKill.exports,
    ...run.move,
    ...run.back,
    silenceBefore: before!,
    silenceAtKill: atKill!,
    silenceAtReturn: atReturn!,
    ...loadFigures(outcome, emulator, o.rate, completeS),
    keeperApplied: applied.length,
    keeperBroken: applied.filter((a) => !a.downloads).length,
    unreportedUses: unreportedUses(logs),
    expiredPermits: expiredPermits(logs),
  };
  console.log(`node loss: ${JSON.stringify(figures)}`);
  // Each applied link: seconds from when it appeared in the config to its expiry (negative: expired already).
  const margins = applied.map((a) => s(Number(new URL(a.url).searchParams.get('expires')) - a.seenAtMs));
  phase(
    `applied links, seconds left when applied: ${JSON.stringify(margins)}; downloads ${JSON.stringify(applied.map((a) => a.downloads))}`,
  );
  return { figures, outcome };
}

export async function nodeLoss(server: ChaosServer, o: NodeLossOptions): Promise<NodeLossFigures> {
  if (server.kind !== 'cluster')
    throw new Error('the node-loss scenario needs the cluster (a dev server has one node)');
  const key = secretKey('chaosnode');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'docs-admin-node-loss-'));
  const emulator = await nodeLossEmulator(o);
  const conn = await connect(server.address);
  const workers: WorkerProcess[] = [];
  let keeperId: string | undefined;
  try {
    const ctx = { key, dir, workers, keeperStarted: (id: string) => void (keeperId = id) };
    const run = await burstWithNodeLoss(server, conn.client, emulator, ctx, o);
    const { figures, outcome } = await settleAndMeasure(server, conn.client, emulator, workers, o, run);
    await keepingEvidence('node-loss', workers, emulator, () => {
      assertOutcome(outcome, run.fleet.lifecycles, emulator, 0, true);
      assert.equal(emulator.jobs().length, run.fleet.agents, 'exactly one agent job per agent workflow');
      assert.deepEqual(
        run.applied.filter((a) => !a.downloads),
        [],
        'the keeper applied only links that download',
      );
      assert.ok(
        workers.every((w) => w.running),
        'the workers kept running',
      );
    });

    await conn.client.workflow.getHandle(keeperId!).terminate('chaos test done');
    keeperId = undefined;
    await Promise.all(workers.map((w) => w.kill('SIGTERM')));
    await assertKeyNowhere({ key, client: conn.client, server, taskQueues: [o.taskQueue], logs: workerLogs(workers) });
    return figures;
  } finally {
    if (keeperId)
      await conn.client.workflow
        .getHandle(keeperId)
        .terminate('chaos test failed')
        .catch(() => undefined);
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    // Whatever happened, node 2 runs again: the cluster is shared.
    await restoreNode2();
    await conn.close();
    await emulator.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The scenario as a test file's one suite: the shared cluster, node 2 brought back whatever happens. */
export function nodeLossSuite(title: string, options: NodeLossOptions, timeoutMs: number): void {
  describe('node loss on a two-node cluster', { skip: clusterSkipReason() }, () => {
    let server: ChaosServer;
    before(async () => {
      server = await chaosServer({ kind: 'cluster' });
    });
    after(async () => {
      await restoreNode2();
      await server?.close();
    });
    test(title, { timeout: timeoutMs }, async () => {
      await nodeLoss(server, options);
    });
  });
}
