// The chaos scenarios, each a function of its size and server so the full runs (test/chaos, `npm run
// chaos`) and the short ones in `npm test` (test/integration/chaos-short.test.ts) are the same code.
// Run the way users run the service: the worker as separate `npm run worker` processes on a task queue
// whose name every run reuses, workflows started by type name with plain JSON (no fairness key, no
// search attributes), an API with a real per-project rate limit. Each scenario asserts its outcome
// and returns the figures it printed.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { maxInAnyWindow } from '../../bench/user-path';
import { ensureKeeper, publish } from '../../src/client';
import { startEmulator, type EmulatorHandle } from '../../emulator';
import { keeperStatusQuery } from '../../src/shared/bundle-keeper';
import { appliedUrl, faultMix, linkDownloads, startInProcessWorker, type InProcessWorker } from './faults';
import {
  WorkerProcess,
  checkOutcomes,
  connect,
  scanForSecret,
  secretKey,
  settle,
  startLifecycles,
  until,
  type Lifecycles,
  type OutcomeReport,
  type Settled,
} from './helpers';
import { terminateLeftovers, type ChaosServer } from './target';
import { writeSinksFile } from '../helpers/sinks';
import { workflowBundle } from '../helpers/temporal';

/** The API's per-project limit on agent job creates, and the worker's AGENT_RATE_LIMIT (the same). */
export interface RateLimit {
  limit: number;
  windowMs: number;
}

export interface ScenarioSize {
  lifecycles: number;
  /** Agent workflows are spread over this many projects. */
  projects: number;
  rate: RateLimit;
}

export const agentRateLimit = (rate: RateLimit) => `${rate.limit}/${rate.windowMs}ms`;
export const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
export const runTag = (name: string) => `${name}-${Date.now().toString(36)}`;
/** Permit uses a worker could not report to its limiter (src/activities/limiter-client.ts logs each). */
export const unreportedUses = (logs: readonly string[]) =>
  countIn(logs, /could not report a permit use to the limiter/g);
/** Permits held up past their use-by time, asked for again instead of used (src/workflows/permits.ts logs each). */
export const expiredPermits = (logs: readonly string[]) =>
  countIn(logs, /a permit expired before its call could be made/g);
/** Each worker process's output, by name. */
export const workerLogs = (workers: readonly WorkerProcess[]): Record<string, string> =>
  Object.fromEntries(workers.map((w, i) => [`worker ${i} log`, w.output.text]));
const countIn = (logs: readonly string[], pattern: RegExp) =>
  logs.reduce((n, log) => n + (log.match(pattern)?.length ?? 0), 0);

/**
 * Runs a scenario's outcome checks; when one fails, keeps what explains it (the worker processes'
 * output, the emulator's jobs) in test-artifacts/chaos/<scenario>-<time>/ and prints that folder: a
 * rare failure is diagnosed from its own run, not from a rerun that passes.
 */
export async function keepingEvidence(
  scenario: string,
  workers: readonly WorkerProcess[],
  emulator: EmulatorHandle,
  check: () => void | Promise<void>,
): Promise<void> {
  try {
    await check();
  } catch (err) {
    const dir = path.resolve(
      __dirname,
      '../../test-artifacts/chaos',
      `${scenario}-${new Date().toISOString().replace(/[:.]/g, '-')}`,
    );
    await mkdir(dir, { recursive: true });
    const evidence = { ...workerLogs(workers), 'emulator jobs': JSON.stringify(emulator.jobs(), null, 2) };
    for (const [name, text] of Object.entries(evidence))
      await writeFile(path.join(dir, `${name.replace(/\W+/g, '-')}.txt`), text);
    // Printed rather than added to the message: the runner shows the stack, made before this.
    console.log(`${scenario}: its outcome check failed; worker output and the emulator's jobs kept in ${dir}`);
    throw err;
  }
}

/** The largest number of creates any project got in any window of the API's length. */
function maxCreatesInWindow(emulator: EmulatorHandle, windowMs: number): number {
  const byProject = new Map<string, number[]>();
  for (const job of emulator.jobs()) {
    const times = byProject.get(job.projectId) ?? [];
    times.push(Date.parse(job.createdAt));
    byProject.set(job.projectId, times);
  }
  return Math.max(0, ...[...byProject.values()].map((times) => maxInAnyWindow(times, windowMs)));
}

/**
 * OutcomeUnknown is allowed only for a create whose request was on the wire when its worker died: its
 * send checkpoint says 'sending'. Anything else would be a create given up on without cause.
 */
async function assertUnknownOnlyWhileSending(client: Client, settled: readonly Settled[]): Promise<void> {
  for (const s of settled.filter((x) => x.failureType === 'OutcomeUnknown')) {
    const events = (await client.workflow.getHandle(s.workflowId).fetchHistory()).events ?? [];
    const timedOut = events.find((e) => e.activityTaskTimedOutEventAttributes)?.activityTaskTimedOutEventAttributes;
    const details = timedOut?.failure?.timeoutFailureInfo?.lastHeartbeatDetails?.payloads?.[0]?.data;
    assert.ok(details, `${s.workflowId}: OutcomeUnknown without a send checkpoint`);
    assert.equal(
      JSON.parse(Buffer.from(details).toString()).phase,
      'sending',
      `${s.workflowId}: OutcomeUnknown although the attempt recorded an answer`,
    );
  }
}

export function allIds(lifecycles: Lifecycles): string[] {
  return [...lifecycles.exportIds, ...lifecycles.agents.map((a) => a.workflowId)];
}

/**
 * Common asserts: nothing lost, no duplicate, and (when `no429`) no create refused by the API's limit.
 * The emulator refuses a create beyond its limit, so the creates it holds never exceed it (printed as
 * maxCreatesInWindow); a 429 is what shows the workers sent more than the limit allows.
 */
export function assertOutcome(
  outcome: OutcomeReport,
  lifecycles: Lifecycles,
  emulator: EmulatorHandle,
  maxUnknown: number,
  no429: boolean,
): void {
  const agents = lifecycles.agents.length;
  assert.deepEqual(outcome.problems, []);
  assert.equal(outcome.duplicates, 0);
  assert.equal(outcome.exportsCompleted, lifecycles.exportIds.length);
  assert.equal(outcome.agentsCompleted + outcome.agentsOutcomeUnknown, agents);
  assert.equal(outcome.agentsUnaccounted, 0);
  assert.ok(
    outcome.agentsOutcomeUnknown <= maxUnknown,
    `${outcome.agentsOutcomeUnknown} agent workflows ended OutcomeUnknown (at most ${maxUnknown})`,
  );
  const jobs = emulator.jobs().length;
  assert.ok(jobs >= outcome.agentsCompleted && jobs <= agents, `${jobs} agent jobs: at most one per agent workflow`);
  if (no429) assert.equal(emulator.counters().rateLimited, 0, 'no create was refused with 429');
}

// ---- worker kill ---------------------------------------------------------------------------------------

export interface WorkerKillOptions extends ScenarioSize {
  /** Worker processes on the one task queue (one is killed). */
  workers: number;
  taskQueue: string;
  /**
   * 'mid-burst': while creates are still being made (a create on the wire may end OutcomeUnknown, and
   * one the dead worker held is retried after its 60 s timeout). 'jobs-exist': once every agent job
   * exists and the API has been quiet for a moment (exports and polls still in flight; no 60 s wait).
   */
  killAt: 'mid-burst' | 'jobs-exist';
}

/** What the worker-kill and server-restart runs both report about their load. */
export interface LoadFigures {
  completeS: number;
  exportsCompleted: number;
  agentsCompleted: number;
  duplicates: number;
  rateLimited: number;
  maxCreatesInWindow: number;
  limit: string;
}

export function loadFigures(
  outcome: OutcomeReport,
  emulator: EmulatorHandle,
  rate: RateLimit,
  completeS: number,
): LoadFigures {
  return {
    completeS: Number(completeS.toFixed(1)),
    exportsCompleted: outcome.exportsCompleted,
    agentsCompleted: outcome.agentsCompleted,
    duplicates: outcome.duplicates,
    rateLimited: emulator.counters().rateLimited,
    maxCreatesInWindow: maxCreatesInWindow(emulator, rate.windowMs),
    limit: `${rate.limit}/${rate.windowMs / 1000}s`,
  };
}

/** The API key appears in no history of the run's task queue, no log given and no CLI output. */
export async function assertKeyNowhere(
  scan: Omit<Parameters<typeof scanForSecret>[0], 'cliSample'>,
  minHistories = 0,
): Promise<void> {
  const found = await scanForSecret({ ...scan, cliSample: 2 });
  assert.ok(found.historiesScanned >= minHistories, `scanned ${found.historiesScanned} histories`);
  assert.deepEqual(found.found, [], 'the API key appears nowhere');
}

export interface WorkerKillFigures extends LoadFigures {
  server: string;
  lifecycles: number;
  workers: number;
  createsAtKill: number;
  exportsAtKill: number;
  outcomeUnknown: number;
  parked: OutcomeReport['agentsParked'];
  unaccounted: number;
}

/**
 * A scenario's fleet and load: what an earlier run left on the task queue terminated, `o.workers`
 * worker processes (pushed onto `workers` as they start, so the caller's finally kills them), then
 * half exports and half agent jobs started by type name with plain JSON.
 */
export async function startFleet(
  server: ChaosServer,
  client: Client,
  emulator: EmulatorHandle,
  key: string,
  o: ScenarioSize & { workers: number; taskQueue: string },
  name: string,
  workers: WorkerProcess[],
  /** KEEPER_SINKS_FILE of the workers (chaosSinksFile), for a watched keeper. */
  sinksFile?: string,
): Promise<{ half: number; agents: number; startedAt: number; lifecycles: Lifecycles }> {
  await terminateLeftovers(client, [o.taskQueue]);
  const env = {
    ...(sinksFile ? { KEEPER_SINKS_FILE: sinksFile } : {}),
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_NAMESPACE: server.namespace,
    TEMPORAL_TASK_QUEUE: o.taskQueue,
    ADMIN_API_URL: emulator.url,
    ADMIN_API_KEY: key,
    AGENT_RATE_LIMIT: agentRateLimit(o.rate),
  };
  workers.push(...(await Promise.all(Array.from({ length: o.workers }, () => WorkerProcess.start({ env })))));
  const half = Math.floor(o.lifecycles / 2);
  const agents = o.lifecycles - half;
  const startedAt = Date.now();
  const lifecycles = await startLifecycles(client, o.taskQueue, {
    exports: half,
    agents,
    projects: o.projects,
    tag: runTag(name),
    plain: true,
  });
  return { half, agents, startedAt, lifecycles };
}

/**
 * Waits for the moment of the kill: mid-burst, a quarter of the agent creates and exports made; or, when
 * every job must exist first, all of them made and the API quiet for 300 ms (no create on the wire).
 */
export async function untilKillMoment(
  emulator: EmulatorHandle,
  killAt: WorkerKillOptions['killAt'],
  agents: number,
  exports: number,
): Promise<void> {
  const creates = () => sum(emulator.counters().agentJobsCreated);
  if (killAt === 'mid-burst') {
    await until(
      () => creates() >= agents / 4 && emulator.counters().exportsStarted >= exports / 4,
      'lifecycles in flight',
      120_000,
    );
    return;
  }
  let last = '';
  let quietSince = Date.now();
  await until(
    () => {
      const c = emulator.counters();
      const now = JSON.stringify(c.calls);
      if (now !== last) [last, quietSince] = [now, Date.now()];
      return sum(c.agentJobsCreated) >= agents && c.exportsStarted >= exports && Date.now() - quietSince >= 300;
    },
    'every job to exist',
    120_000,
    50,
  );
}

export async function workerKill(server: ChaosServer, o: WorkerKillOptions): Promise<WorkerKillFigures> {
  const key = secretKey('chaoskill');
  const emulator = await startEmulator({
    agentActiveMs: 2_000,
    exportQueuedMs: 500,
    exportDurationMs: 3_000,
    rateLimit: o.rate,
    retryAfterForm: 'none',
  });
  const conn = await connect(server.address);
  const workers: WorkerProcess[] = [];
  try {
    const { half, agents, startedAt, lifecycles } = await startFleet(
      server,
      conn.client,
      emulator,
      key,
      o,
      'kill',
      workers,
    );
    const creates = () => sum(emulator.counters().agentJobsCreated);
    await untilKillMoment(emulator, o.killAt, agents, half);
    const atKill = { creates: creates(), exports: emulator.counters().exportsStarted };
    const victim = workers[0]!;
    await victim.kill('SIGKILL');
    assert.equal(victim.child.signalCode, 'SIGKILL');
    if (o.killAt === 'mid-burst')
      assert.ok(atKill.creates < agents, `killed mid-burst (${atKill.creates} of ${agents} creates made)`);

    const settled = await settle(conn.client, allIds(lifecycles), {
      operator: { agents: lifecycles.agents, jobs: () => emulator.jobs() },
    });
    const completeS = (Math.max(...settled.map((s) => s.atMs)) - startedAt) / 1000;
    const outcome = checkOutcomes(lifecycles, settled, emulator.jobs(), { allowOutcomeUnknown: true });
    const figures: WorkerKillFigures = {
      server: server.label,
      lifecycles: o.lifecycles,
      workers: o.workers,
      createsAtKill: atKill.creates,
      exportsAtKill: atKill.exports,
      ...loadFigures(outcome, emulator, o.rate, completeS),
      outcomeUnknown: outcome.agentsOutcomeUnknown,
      parked: outcome.agentsParked,
      unaccounted: outcome.agentsUnaccounted,
    };
    console.log(`worker kill: ${JSON.stringify(figures)}`);
    assert.ok(
      workers.slice(1).every((w) => w.running),
      'the other workers kept running',
    );
    // With every job created before the kill no create was on the wire: all complete.
    await keepingEvidence('worker-kill', workers, emulator, async () => {
      assertOutcome(outcome, lifecycles, emulator, o.killAt === 'mid-burst' ? 10 : 0, true);
      await assertUnknownOnlyWhileSending(conn.client, settled);
    });

    await Promise.all(workers.map((w) => w.kill('SIGTERM')));
    await assertKeyNowhere(
      { key, client: conn.client, server, taskQueues: [o.taskQueue], logs: workerLogs(workers) },
      o.lifecycles,
    );
    return figures;
  } finally {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await conn.close();
    await emulator.close();
  }
}

// ---- server restart ------------------------------------------------------------------------------------

export interface ServerRestartOptions extends ScenarioSize {
  workers: number;
  taskQueue: string;
}

export interface ServerRestartFigures extends LoadFigures {
  server: string;
  lifecycles: number;
  createsAtRestart: number;
  exportsAtRestart: number;
  outageS: number;
  unreportedUses: number;
  expiredPermits: number;
}

/** Restarts the server and checks what must hold across it: a new process, the same config, the workers up. */
async function restartChecked(server: ChaosServer, workers: WorkerProcess[]) {
  const restart = await server.restart();
  assert.notEqual(restart.pidAfter, restart.pidBefore, 'a new server process');
  if (restart.config)
    assert.equal(restart.config.after, restart.config.before, 'the server runs with the dynamic config it had');
  assert.ok(
    workers.every((w) => w.running),
    'the workers survived the restart',
  );
  return restart;
}

export async function serverRestart(server: ChaosServer, o: ServerRestartOptions): Promise<ServerRestartFigures> {
  const key = secretKey('chaosrestart');
  const emulator = await startEmulator({
    agentActiveMs: 3_000,
    exportQueuedMs: 500,
    exportDurationMs: 4_000,
    rateLimit: o.rate,
    retryAfterForm: 'none',
  });
  const workers: WorkerProcess[] = [];
  let conn = await connect(server.address);
  try {
    const { half, agents, startedAt, lifecycles } = await startFleet(
      server,
      conn.client,
      emulator,
      key,
      o,
      'restart',
      workers,
    );
    await conn.close();
    await untilKillMoment(emulator, 'mid-burst', agents, half);
    const atRestart = {
      creates: sum(emulator.counters().agentJobsCreated),
      exports: emulator.counters().exportsStarted,
    };
    const restart = await restartChecked(server, workers);

    conn = await connect(server.address);
    const settled = await settle(conn.client, allIds(lifecycles), {
      operator: { agents: lifecycles.agents, jobs: () => emulator.jobs() },
    });
    const completeS = (Math.max(...settled.map((s) => s.atMs)) - startedAt) / 1000;
    const outcome = checkOutcomes(lifecycles, settled, emulator.jobs());
    const logs = Object.values(workerLogs(workers));
    const figures: ServerRestartFigures = {
      server: server.label,
      lifecycles: o.lifecycles,
      createsAtRestart: atRestart.creates,
      exportsAtRestart: atRestart.exports,
      outageS: Number((restart.outageMs / 1000).toFixed(1)),
      ...loadFigures(outcome, emulator, o.rate, completeS),
      unreportedUses: unreportedUses(logs),
      expiredPermits: expiredPermits(logs),
    };
    console.log(`server restart: ${JSON.stringify(figures)}`);
    // No worker died: every create's outcome is known, so every agent workflow completes. 429s are
    // printed, not asserted: under load a restart once let creates through too early (9 refusals of 20
    // jobs' creates in one of five short runs, each retried, nothing lost). The suspected cause, a create
    // held up past its permit's lease, is closed since (permits carry a use-by time: expiredPermits
    // counts those asked for again); unreportedUses counts the other candidate.
    await keepingEvidence('server-restart', workers, emulator, () => {
      assertOutcome(outcome, lifecycles, emulator, 0, false);
      assert.equal(emulator.jobs().length, agents, 'exactly one agent job per agent workflow');
    });

    await Promise.all(workers.map((w) => w.kill('SIGTERM')));
    await assertKeyNowhere({
      key,
      client: conn.client,
      server,
      taskQueues: [o.taskQueue],
      logs: { ...workerLogs(workers), 'server log': server.log() },
    });
    return figures;
  } finally {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    await conn.close();
    await emulator.close();
  }
}

// ---- API fault mix -------------------------------------------------------------------------------------

export interface ApiFaultsOptions extends ScenarioSize {
  taskQueue: string;
}

export interface ApiFaultsFigures {
  server: string;
  lifecycles: number;
  faults: number;
  completeS: number;
  exportsCompleted: number;
  agentsCompleted: number;
  outcomeUnknown: number;
  parked: OutcomeReport['agentsParked'];
  unaccounted: number;
  duplicates: number;
  keeperApplied: number;
  keeperBroken: number;
}

/** The watched keeper's sink: a file sink writing the deployment's config into `dir`. */
const CHAOS_SINK = 'chaos-deployment';

/** A fresh domain for a scenario's watched keeper (its sink serves it alone). */
export const watchedKeeperDomain = (): string => `${runTag('keeper-faults')}.docs.example.com`;

/** The sinks file the workers of a scenario with a watched keeper of `domain` need (KEEPER_SINKS_FILE). */
export function chaosSinksFile(dir: string, domain: string): Promise<string> {
  return writeSinksFile(dir, {
    [CHAOS_SINK]: { type: 'file', path: path.join(dir, 'deployment.json'), domains: [domain] },
  });
}

/** The fault mix's keeper: a file sink, links of 12 s refreshed at half their lifetime; every applied link watched. */
export async function startWatchedKeeper(client: Client, taskQueue: string, dir: string, domain: string) {
  const configFile = path.join(dir, 'deployment.json');
  const keeper = await ensureKeeper(
    client,
    { domain, sink: CHAOS_SINK, refreshMargin: { fraction: 0.5, minMs: 1_000 } },
    { taskQueue },
  );
  return { keeper, domain, applied: watchAppliedLinks(configFile) };
}

export interface AppliedLinks extends Array<{ url: string; downloads: boolean; seenAtMs: number }> {
  stop(): Promise<void>;
}

/** Every link the keeper writes to the deployment's config file, and whether it downloads, until stop(). */
export function watchAppliedLinks(configFile: string): AppliedLinks {
  let watching = true;
  const applied = [] as unknown as AppliedLinks;
  const watcher = (async () => {
    let last: string | undefined;
    while (watching) {
      const url = await appliedUrl(configFile);
      if (url && url !== last) {
        last = url;
        const seenAtMs = Date.now();
        applied.push({ url, downloads: await linkDownloads(url), seenAtMs });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  applied.stop = async () => {
    watching = false;
    await watcher;
  };
  return applied;
}

function assertApiFaultOutcome(
  outcome: OutcomeReport,
  applied: AppliedLinks,
  expected: { faults: number; lifecycles: number; exports: number; agents: number },
): void {
  const { faults, lifecycles } = expected;
  assert.ok(faults >= Math.min(20, Math.floor(lifecycles / 6)), `faults were injected (${faults})`);
  assert.deepEqual(
    outcome.problems,
    [],
    'every export completes; agent workflows complete or fail only with OutcomeUnknown',
  );
  assert.equal(outcome.duplicates, 0);
  assert.equal(outcome.exportsCompleted, expected.exports);
  assert.equal(outcome.agentsCompleted + outcome.agentsOutcomeUnknown, expected.agents);
  assert.equal(outcome.agentsUnaccounted, 0);
  assert.ok(outcome.agentsCompleted > 0, 'most agent jobs complete');
  assert.deepEqual(
    applied.filter((a) => !a.downloads),
    [],
    'every applied link downloads',
  );
}

/** The fault mix's in-process worker, on a task queue cleared of what an interrupted run left there. */
async function startFaultWorker(
  server: ChaosServer,
  o: ApiFaultsOptions,
  emulator: EmulatorHandle,
  key: string,
  sinksFile: string,
): Promise<InProcessWorker> {
  const cleaner = await connect(server.address);
  await terminateLeftovers(cleaner.client, [o.taskQueue]).finally(() => cleaner.close());
  return startInProcessWorker({
    address: server.address,
    taskQueue: o.taskQueue,
    emulator,
    key,
    sinksFile,
    agentRateLimit: agentRateLimit(o.rate),
    // The worker's own bundle, made once per test run (the harness's cache) instead of once per scenario.
    workflowBundle: await workflowBundle(),
  });
}

function apiFaultFigures(
  server: ChaosServer,
  o: ApiFaultsOptions,
  outcome: OutcomeReport,
  applied: AppliedLinks,
  measured: { faults: number; completeS: number },
): ApiFaultsFigures {
  return {
    server: server.label,
    lifecycles: o.lifecycles,
    faults: measured.faults,
    completeS: Number(measured.completeS.toFixed(1)),
    exportsCompleted: outcome.exportsCompleted,
    agentsCompleted: outcome.agentsCompleted,
    outcomeUnknown: outcome.agentsOutcomeUnknown,
    parked: outcome.agentsParked,
    unaccounted: outcome.agentsUnaccounted,
    duplicates: outcome.duplicates,
    keeperApplied: applied.length,
    keeperBroken: applied.filter((a) => !a.downloads).length,
  };
}

/**
 * 10 % 5xx, 5 % resets, 5 % slow beyond the client timeout and 2 % non-JSON bodies on every route (see
 * faults.ts), with an in-process worker whose API client times out in seconds. Exports all complete;
 * each agent workflow completes with its one job or fails OutcomeUnknown with at most one; a keeper
 * with a file sink never applies a link that does not download. (The API's rate limit is generous
 * here: injected 429s are not part of the mix, and its own would only add waiting.)
 */
export async function apiFaults(server: ChaosServer, o: ApiFaultsOptions): Promise<ApiFaultsFigures> {
  const key = secretKey('chaosfaults');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'docs-admin-faults-'));
  const emulator = await startEmulator({
    agentActiveMs: 2_000,
    exportQueuedMs: 300,
    exportDurationMs: 2_000,
    bundleTtlMs: 12_000,
    rateLimit: o.rate,
  });
  let worker: InProcessWorker | undefined;
  let keeperId: string | undefined;
  try {
    const keeperDomain = watchedKeeperDomain();
    worker = await startFaultWorker(server, o, emulator, key, await chaosSinksFile(dir, keeperDomain));
    const { client } = worker;
    emulator.setFaults(faultMix(), 7);

    const { keeper, domain, applied } = await startWatchedKeeper(client, o.taskQueue, dir, keeperDomain);
    keeperId = keeper.workflowId;
    const half = Math.floor(o.lifecycles / 2);
    const agents = o.lifecycles - half;
    const startedAt = Date.now();
    const lifecycles = await startLifecycles(client, o.taskQueue, {
      exports: half,
      agents,
      projects: o.projects,
      tag: runTag('faults'),
      plain: true,
    });
    await until(() => applied.length >= 1, 'the keeper to apply a first bundle', 120_000);
    await publish(client, domain);
    const settled = await settle(client, allIds(lifecycles), {
      operator: { agents: lifecycles.agents, jobs: () => emulator.jobs() },
    });
    const completeS = (Math.max(...settled.map((s) => s.atMs)) - startedAt) / 1000;
    await publish(client, domain);
    await until(() => applied.length >= 4, 'the keeper to apply four bundles (exports and refreshes)', 120_000);
    await applied.stop();
    const status = await keeper.query(keeperStatusQuery);

    const outcome = checkOutcomes(lifecycles, settled, emulator.jobs(), { allowOutcomeUnknown: true });
    const counters = emulator.counters();
    const faults = sum(counters.faultsInjected);
    const figures = apiFaultFigures(server, o, outcome, applied, { faults, completeS });
    console.log(
      `api faults: ${JSON.stringify(figures)}; injected ${JSON.stringify(counters.faultsInjected)}; ` +
        `keeper ${status.exportsDone} exports, ${status.refreshesDone} refreshes; downloads ok ${counters.downloadsOk}, denied ${counters.downloadsDenied}`,
    );
    assertApiFaultOutcome(outcome, applied, { faults, lifecycles: o.lifecycles, exports: half, agents });

    emulator.setFaults([]);
    await keeper.terminate('chaos test done');
    keeperId = undefined;
    await assertKeyNowhere({
      key,
      client,
      server,
      taskQueues: [o.taskQueue],
      logs: { 'worker log': worker.logs.join('') },
    });
    return figures;
  } finally {
    if (keeperId && worker)
      await worker.client.workflow
        .getHandle(keeperId)
        .terminate('chaos test failed')
        .catch(() => undefined);
    await worker?.close();
    await emulator.close();
    await rm(dir, { recursive: true, force: true });
  }
}
