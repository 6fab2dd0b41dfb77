// Benchmarks on the path users take: the worker as its own process(es) (`npm run worker`), jobs started
// by workflow type name with plain JSON from this separate process (what another service or a Schedule
// sends: no fairness key, no search attributes), on a named Temporal server, reusing the default task
// queue and the same project ids from run to run, as a long-lived deployment does.
//
//   burst:  300 agent jobs of one project and 10 of another against an API allowing 100 creates per
//           window with no Retry-After: 429s, project A's drain against the theoretical minimum,
//           project B's completions.
//   mixed:  150 exports and 150 agent jobs lasting 2-8 s, all in flight at once: completions per
//           second and lag (workflow completion minus the API job's completion), p50/p99.
//
// `npx tsx bench/user-path.ts [burst|mixed] --address 127.0.0.1:7633 [--workers 3] [--window 10s] [--warm-up 60]`
// prints the figures as JSON; `mixed --encryption both [--exports N --agents N]` runs the mix without and
// then with payload encryption (a fresh key file) and prints both and their ratio (the codec's cost);
// `--encryption on` only the encrypted run; `... report [--pairs N]` runs the full matrix (cluster and tuned dev server,
// the mixed runs N times in turn).
// BENCH_WORKER_LOGS=DIR keeps the worker processes' output.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { generateKeyLine, payloadEncryption } from '../src/codec';
import { parseDuration } from '../src/config';
import { startEmulator, type EmulatorHandle } from '../emulator';
import { theoreticalDrainMs } from '../src/policies/rate-window';
import { DEFAULT_TASK_QUEUE } from '../src/shared/defaults';
import { WorkflowType } from '../src/shared/workflow-types';
import { type RateLimiterStatus, rateLimiterStatusQuery, rateLimiterWorkflowId } from '../src/shared/rate-limiter';
import { WorkerProcess, mapLimit } from '../test/chaos/helpers';
import { waitFor } from '../scripts/wait';
import { completionTimes } from './lib/completions';
import { type LimiterLoad, describeLimiterLoad, limiterLoad } from './lib/limiter-load';

const KEY = 'mint_bench_user_path_key';

export interface UserPathTarget {
  /** What the figures are labelled with (e.g. "cluster (default settings)"). */
  label: string;
  address: string;
  namespace?: string;
}

interface Fleet {
  client: Client;
  emu: EmulatorHandle;
  workers: WorkerProcess[];
  close(): Promise<void>;
}

/**
 * BENCH_WORKER_LOGS=DIR keeps each worker process's output (the last 4 MiB) as DIR/<time>-worker-<pid>.log:
 * what a straggler's worker said (its histories name the worker by pid@host).
 */
function keepWorkerLogs(workers: readonly WorkerProcess[]): void {
  const dir = process.env.BENCH_WORKER_LOGS;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  const at = new Date().toISOString().replace(/[:.]/g, '-');
  for (const w of workers) writeFileSync(path.join(dir, `${at}-worker-${w.pid}.log`), w.output.text);
}

/** The emulator, `workers` worker processes on the default task queue, and a client: what a deployment has. */
async function startFleet(
  target: UserPathTarget,
  workers: number,
  emulatorOptions: Parameters<typeof startEmulator>[0],
  rateLimit: string,
  payloadKeysFile?: string,
): Promise<Fleet> {
  const emu = await startEmulator(emulatorOptions);
  const connection = await Connection.connect({ address: target.address });
  const dataConverter = payloadKeysFile ? payloadEncryption(payloadKeysFile).dataConverter : undefined;
  const client = new Client({ connection, namespace: target.namespace ?? 'default', dataConverter });
  const env = {
    ...(payloadKeysFile ? { PAYLOAD_ENCRYPTION_KEYS_FILE: payloadKeysFile } : {}),
    TEMPORAL_ADDRESS: target.address,
    TEMPORAL_NAMESPACE: target.namespace ?? 'default',
    TEMPORAL_TASK_QUEUE: DEFAULT_TASK_QUEUE,
    ADMIN_API_URL: emu.url,
    ADMIN_API_KEY: KEY,
    AGENT_RATE_LIMIT: rateLimit,
    METRICS_PORT: '0',
  };
  const started: WorkerProcess[] = [];
  try {
    for (let i = 0; i < workers; i++)
      started.push(await WorkerProcess.start({ env, readyLine: 'docs-admin worker started', readyTimeoutMs: 120_000 }));
  } catch (err) {
    await Promise.all(started.map((w) => w.kill('SIGTERM')));
    await emu.close();
    await connection.close();
    throw err;
  }
  return {
    client,
    emu,
    workers: started,
    async close() {
      await Promise.all(started.map((w) => w.kill('SIGTERM')));
      keepWorkerLogs(started);
      await connection.close();
      await emu.close();
    },
  };
}

/**
 * Waits until a project's limiter (reused from an earlier run) has nothing left in its window: at most
 * three of the longer of `windowMs` and the limiter's own window (an earlier run's may be longer), plus a
 * minute. A timeout names the limiter's last status.
 */
async function limiterIdle(client: Client, projectId: string, windowMs: number): Promise<void> {
  const handle = client.workflow.getHandle(rateLimiterWorkflowId(projectId));
  let last: RateLimiterStatus | undefined;
  const idle = async (): Promise<boolean> => {
    try {
      const described = await handle.describe();
      if (described.status.name !== 'RUNNING') return true;
      last = await handle.query(rateLimiterStatusQuery);
    } catch {
      return true; // never started
    }
    // inWindow is as of the limiter's last task; windowEmptyAt says when its slots free in real time.
    const { windowEmptyAt } = last;
    const emptyAt =
      windowEmptyAt === undefined
        ? Number.POSITIVE_INFINITY // a limiter of an earlier release: its inWindow only
        : windowEmptyAt === null
          ? 0
          : Date.parse(windowEmptyAt);
    return last.queued === 0 && (last.inWindow === 0 || emptyAt <= Date.now());
  };
  if ((await idle()) || !last) return;
  await waitFor(idle, {
    timeoutMs: 3 * Math.max(windowMs, last.windowMs) + 60_000,
    intervalMs: 1_000,
    what: () => `the rate limiter of ${projectId} to be idle; last status ${JSON.stringify(last)}`,
  });
}

const percentile = (sorted: readonly number[], p: number): number =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const seconds = (ms: number): number => Math.round(ms / 100) / 10;
const round2 = (x: number): number => Math.round(x * 100) / 100;

/** The largest number of creates inside any window of windowMs (the API's view of the limit). */
export function maxInAnyWindow(timesMs: readonly number[], windowMs: number): number {
  const sorted = [...timesMs].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= windowMs) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

// ---- burst --------------------------------------------------------------------------------------------

export interface BurstOptions {
  workers?: number;
  /** The API's and AGENT_RATE_LIMIT's window, e.g. 10_000. */
  windowMs?: number;
  jobs?: number;
  otherJobs?: number;
  limit?: number;
  agentActiveMs?: number;
  log?: (line: string) => void;
}

export interface BurstFigures {
  server: string;
  workers: number;
  windowMs: number;
  jobs: number;
  otherJobs: number;
  completed: number;
  failed: number;
  createCalls: number;
  rateLimited: number;
  /** Most creates of one project the API saw inside any one window. */
  maxCreatesInWindow: number;
  /** Burst start to project A's last completion. */
  drainS: number;
  theoreticalMinS: number;
  drainRatio: number;
  /** The targets: 1.25x + 3 s at a 10 s window, 1.1x at 60 s. */
  drainTargetS: number;
  /** Burst start to project B's last create and last completion. */
  otherLastCreateS: number;
  otherLastCompletionS: number;
  /** What the burst cost project A's limiter (its histories): less noisy than the times. */
  limiterA: LimiterLoad;
}

/** When the API created each job of a project (epoch ms). */
function createdAt(emu: EmulatorHandle, projectId: string): number[] {
  return emu
    .jobs()
    .filter((j) => j.projectId === projectId)
    .map((j) => Date.parse(j.createdAt));
}

/**
 * Where a drain's time goes: how long each window's creates took to go out, and when the API finished
 * the last job (the rest, to its workflow's completion, is the agent polling floor and a task).
 */
function describeDrain(emu: EmulatorHandle, projectId: string, startedAt: number, limit: number): string {
  const creates = createdAt(emu, projectId)
    .map((t) => t - startedAt)
    .sort((x, y) => x - y);
  const spans = Array.from({ length: Math.ceil(creates.length / limit) }, (_, w) => {
    const inWindow = creates.slice(w * limit, (w + 1) * limit);
    return `${seconds(inWindow[0]!)}-${seconds(inWindow[inWindow.length - 1]!)} s`;
  });
  const lastApiDone = Math.max(
    ...emu
      .jobs()
      .filter((j) => j.projectId === projectId)
      .map((j) => Date.parse(j.activeUntil) - startedAt),
  );
  return `  project A creates by window: ${spans.join(', ')}; last job done in the API at ${seconds(lastApiDone)} s`;
}

/** Starts `jobs` agent jobs of project A, then `otherJobs` of project B, by type name with plain JSON. */
async function startBurst(
  client: Client,
  burst: { projectA: string; projectB: string; jobs: number; otherJobs: number },
): Promise<{ a: WorkflowHandle[]; b: WorkflowHandle[]; startedAt: number }> {
  const run = Date.now().toString(36);
  const start = (projectId: string, i: number) =>
    client.workflow.start(WorkflowType.agentJob, {
      taskQueue: DEFAULT_TASK_QUEUE,
      workflowId: `bench-burst-${projectId}-${run}-${i}`,
      args: [{ projectId, prompt: `Burst job ${i} of ${projectId}` }],
    });
  const startedAt = Date.now();
  const a = await mapLimit(
    Array.from({ length: burst.jobs }, (_, i) => i),
    50,
    (i) => start(burst.projectA, i),
  );
  const b = await mapLimit(
    Array.from({ length: burst.otherJobs }, (_, i) => i),
    10,
    (i) => start(burst.projectB, i),
  );
  return { a, b, startedAt };
}

export async function runBurst(target: UserPathTarget, options: BurstOptions = {}): Promise<BurstFigures> {
  const workers = options.workers ?? 1;
  const windowMs = options.windowMs ?? 10_000;
  const jobs = options.jobs ?? 300;
  const otherJobs = options.otherJobs ?? 10;
  const limit = options.limit ?? 100;
  const agentActiveMs = options.agentActiveMs ?? 1_500;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  // The same project ids every run, as a deployment has.
  const projectA = 'bench-burst-a';
  const projectB = 'bench-burst-b';
  const fleet = await startFleet(
    target,
    workers,
    { agentActiveMs, rateLimit: { limit, windowMs }, retryAfterForm: 'none' },
    `${limit}/${windowMs}ms`,
  );
  try {
    const { client, emu } = fleet;
    for (const p of [projectA, projectB]) await limiterIdle(client, p, windowMs);
    const { a, b, startedAt } = await startBurst(client, { projectA, projectB, jobs, otherJobs });
    log(
      `burst on ${target.label}, ${workers} worker(s), ${windowMs / 1000} s window: started ${jobs} + ${otherJobs} in ${Date.now() - startedAt} ms`,
    );
    const onFailure = (id: string, err: unknown) => log(`  ${id} failed: ${(err as Error).message}`);
    const [aRun, bRun] = await Promise.all([
      completionTimes(a, startedAt, onFailure),
      completionTimes(b, startedAt, onFailure),
    ]);
    const [aDone, bDone, failed] = [aRun.doneMs, bRun.doneMs, aRun.failed + bRun.failed];
    const counters = emu.counters();
    const createCalls = Object.values(counters.calls.createAgentJob ?? {}).reduce((x, y) => x + y, 0);
    const created = (projectId: string) => createdAt(emu, projectId);
    const drainMs = Math.max(...aDone.filter(Number.isFinite));
    log(describeDrain(emu, projectA, startedAt, limit));
    const limiterA = await limiterLoad(client, projectA, startedAt);
    log(describeLimiterLoad(limiterA));
    const minMs = theoreticalDrainMs(jobs, { limit, windowMs }) + agentActiveMs;
    const ratio = drainMs / minMs;
    return {
      server: target.label,
      workers,
      windowMs,
      jobs,
      otherJobs,
      completed: [...aDone, ...bDone].filter(Number.isFinite).length,
      failed,
      createCalls,
      rateLimited: counters.calls.createAgentJob?.['429'] ?? 0,
      maxCreatesInWindow: Math.max(
        maxInAnyWindow(created(projectA), windowMs),
        maxInAnyWindow(created(projectB), windowMs),
      ),
      drainS: seconds(drainMs),
      theoreticalMinS: seconds(minMs),
      drainRatio: round2(ratio),
      drainTargetS: seconds(windowMs <= 10_000 ? 1.25 * minMs + 3_000 : 1.1 * minMs),
      otherLastCreateS: seconds(Math.max(...created(projectB)) - startedAt),
      otherLastCompletionS: seconds(Math.max(...bDone.filter(Number.isFinite))),
      limiterA,
    };
  } finally {
    await fleet.close();
  }
}

// ---- mixed lifecycles ---------------------------------------------------------------------------------

export interface MixedOptions {
  workers?: number;
  exports?: number;
  agents?: number;
  /** Agent jobs spread over this many projects. Default 10. */
  projects?: number;
  /**
   * Lifecycles of the same mix run to completion, untimed, before the measured ones (default 0: the
   * worker processes are fresh). A long-running fleet's processes are warm; fresh ones spend part of
   * the run compiling hot code, three of them three times over.
   */
  warmUp?: number;
  /**
   * Workers and client encrypt payloads with this key file. The agent jobs then use projects of their
   * own (bench-mixed-enc-p*), whose rate limiters are terminated at the end: a worker without the key
   * must never be handed their encrypted histories.
   */
  payloadKeysFile?: string;
  log?: (line: string) => void;
}

export interface MixedFigures {
  server: string;
  encrypted?: boolean;
  workers: number;
  lifecycles: number;
  completed: number;
  failed: number;
  wallS: number;
  completedPerSecond: number;
  lagP50S: number;
  lagP99S: number;
  medianCompletionS: number;
}

/** 2 to 8 s, fixed per key (the same job lasts as long in every run and on every server). */
export function durationOf(key: string): number {
  return 2_000 + (createHash('sha256').update(key).digest().readUInt32BE(0) % 6_001);
}

type MixItem = { kind: 'export' | 'agent'; i: number };

/** Exports and agent jobs alternating, as a busy namespace receives them. */
function interleave(exportsCount: number, agents: number): MixItem[] {
  const items: MixItem[] = [];
  for (let i = 0; i < Math.max(exportsCount, agents); i++) {
    if (i < exportsCount) items.push({ kind: 'export', i });
    if (i < agents) items.push({ kind: 'agent', i });
  }
  return items;
}

const mixKey = (item: MixItem, run: string) =>
  item.kind === 'export' ? `m${item.i}-${run}.docs.example.com` : `Mixed job ${item.i} (${run})`;

/** Starts the mix by type name with plain JSON, 50 starts in flight. */
function startMix(client: Client, items: MixItem[], run: string, projectPrefix: string, projects: number) {
  return mapLimit(items, 50, (item) =>
    item.kind === 'export'
      ? client.workflow.start(WorkflowType.staticExport, {
          taskQueue: DEFAULT_TASK_QUEUE,
          workflowId: `bench-mixed-export-${run}-${item.i}`,
          args: [{ domain: mixKey(item, run) }],
        })
      : client.workflow.start(WorkflowType.agentJob, {
          taskQueue: DEFAULT_TASK_QUEUE,
          workflowId: `bench-mixed-agent-${run}-${item.i}`,
          args: [{ projectId: `${projectPrefix}${item.i % projects}`, prompt: mixKey(item, run) }],
        }),
  );
}

/** Each completion minus the API job's own end (from the emulator's records), sorted; failures left out. */
function completionLags(emu: EmulatorHandle, items: MixItem[], run: string, closedAt: number[]): number[] {
  const apiDone = new Map<string, number>();
  for (const e of emu.exports()) apiDone.set(e.domain, Date.parse(e.finishesAt));
  for (const j of emu.jobs()) apiDone.set(j.prompt, Date.parse(j.activeUntil));
  const lags: number[] = [];
  items.forEach((item, k) => {
    const api = apiDone.get(mixKey(item, run));
    if (api !== undefined && Number.isFinite(closedAt[k])) lags.push(closedAt[k]! - api);
  });
  return lags.sort((x, y) => x - y);
}

export async function runMixed(target: UserPathTarget, options: MixedOptions = {}): Promise<MixedFigures> {
  const workers = options.workers ?? 1;
  const exportsCount = options.exports ?? 150;
  const agents = options.agents ?? 150;
  const projects = options.projects ?? 10;
  const projectPrefix = options.payloadKeysFile ? 'bench-mixed-enc-p' : 'bench-mixed-p';
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const fleet = await startFleet(
    target,
    workers,
    {
      exportQueuedMs: 0,
      durationFor: (_kind, key) => durationOf(key),
      rateLimit: { limit: 10_000, windowMs: 3_600_000 },
    },
    '10000/1h',
    options.payloadKeysFile,
  );
  try {
    const { client, emu } = fleet;
    const startAll = (items: MixItem[], run: string) => startMix(client, items, run, projectPrefix, projects);
    // Untimed lifecycles first on the same worker processes, as a long-running fleet has run before.
    const warmUp = options.warmUp ?? 0;
    if (warmUp > 0) {
      const warm = await startAll(
        interleave(Math.ceil(warmUp / 2), Math.floor(warmUp / 2)),
        `w${Date.now().toString(36)}`,
      );
      await Promise.all(warm.map((h) => h.result()));
    }
    const run = Date.now().toString(36);
    const items = interleave(exportsCount, agents);
    const startedAt = Date.now();
    const handles = await startAll(items, run);
    log(`mixed on ${target.label}, ${workers} worker(s): started ${items.length} in ${Date.now() - startedAt} ms`);
    const onFailure = (id: string, err: unknown) => log(`  ${id} failed: ${(err as Error).message}`);
    const { doneMs, failed } = await completionTimes(handles, startedAt, onFailure);
    const closedAt = doneMs.map((ms) => startedAt + ms);
    const lags = completionLags(emu, items, run, closedAt);
    const finished = closedAt.filter(Number.isFinite).sort((x, y) => x - y);
    const wallMs = Math.max(...finished) - startedAt;
    return {
      server: target.label,
      ...(options.payloadKeysFile ? { encrypted: true } : {}),
      workers,
      lifecycles: items.length,
      completed: finished.length,
      failed,
      wallS: seconds(wallMs),
      completedPerSecond: round2(finished.length / (wallMs / 1000)),
      lagP50S: seconds(percentile(lags, 50)),
      lagP99S: seconds(percentile(lags, 99)),
      medianCompletionS: seconds(percentile(finished, 50) - startedAt),
    };
  } finally {
    if (options.payloadKeysFile) await terminateLimiters(fleet.client, projectPrefix, projects);
    await fleet.close();
  }
}

async function terminateLimiters(client: Client, prefix: string, projects: number): Promise<void> {
  for (let p = 0; p < projects; p++) {
    await client.workflow
      .getHandle(rateLimiterWorkflowId(`${prefix}${p}`))
      .terminate('bench: encrypted limiter, no worker without the key may take it')
      .catch(() => undefined);
  }
}

/** runMixed with payload encryption under a fresh key file (removed afterwards). */
export async function runMixedEncrypted(
  target: UserPathTarget,
  options: Omit<MixedOptions, 'payloadKeysFile'> = {},
): Promise<MixedFigures> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-keys-'));
  try {
    const keys = path.join(dir, 'payload-keys');
    writeFileSync(keys, `${generateKeyLine()}\n`, { mode: 0o600 });
    return await runMixed(target, { ...options, payloadKeysFile: keys });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The mix without and then with payload encryption, and the encrypted run's completions/s over the plain one's. */
export async function runMixedEncryption(
  target: UserPathTarget,
  options: Omit<MixedOptions, 'payloadKeysFile'> = {},
): Promise<{ plain: MixedFigures; encrypted: MixedFigures; encryptedOverPlain: number }> {
  const plain = await runMixed(target, options);
  const encrypted = await runMixedEncrypted(target, options);
  return { plain, encrypted, encryptedOverPlain: round2(encrypted.completedPerSecond / plain.completedPerSecond) };
}

// ---- the report: cluster against the tuned dev server -------------------------------------------------

export interface UserPathReport {
  mixed: MixedFigures[];
  burst: BurstFigures[];
  /**
   * Cluster completions per second over the tuned dev server's, per worker count (target >= 0.8): the
   * median over the pairs of runs, and each pair's (a pair is a cluster run and the dev run after it).
   */
  clusterVsTuned: { workers: number; ratio: number; pairs: number[] }[];
}

/**
 * The whole comparison in one run: mixed lifecycles on the cluster (production defaults) and on a
 * tuned dev server, with 1 and 3 worker processes, `pairs` times in turn (one run moves by 10-20 % on
 * two shared cores); the burst on the cluster at a 10 s and a 60 s window.
 */
export async function runUserPathReport(
  cluster: UserPathTarget,
  tuned: UserPathTarget,
  log = (l: string) => process.stderr.write(`${l}\n`),
  pairs = 1,
): Promise<UserPathReport> {
  const mixed: MixedFigures[] = [];
  const ratios = new Map<number, number[]>([
    [1, []],
    [3, []],
  ]);
  for (let pair = 0; pair < pairs; pair++) {
    for (const [workers, pairRatios] of ratios) {
      const [onCluster, onTuned] = [await runMixed(cluster, { workers, log }), await runMixed(tuned, { workers, log })];
      for (const figures of [onCluster, onTuned]) {
        log(`  ${JSON.stringify(figures)}`);
        mixed.push(figures);
      }
      pairRatios.push(round2(onCluster.completedPerSecond / onTuned.completedPerSecond));
    }
  }
  const burst: BurstFigures[] = [];
  for (const [workers, windowMs] of [
    [1, 10_000],
    [3, 10_000],
    [1, 60_000],
  ] as const) {
    const figures = await runBurst(cluster, { workers, windowMs, log });
    log(`  ${JSON.stringify(figures)}`);
    burst.push(figures);
  }
  const clusterVsTuned = [...ratios].map(([workers, pairRatios]) => ({
    workers,
    ratio: percentile(
      [...pairRatios].sort((x, y) => x - y),
      50,
    ),
    pairs: pairRatios,
  }));
  return { mixed, burst, clusterVsTuned };
}

export function userPathMarkdown(report: UserPathReport): string {
  const lines = [
    '| server | workers | lifecycles | completed | wall (s) | completed/s | lag p50 / p99 (s) |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...report.mixed.map(
      (m) =>
        `| ${m.server} | ${m.workers} | ${m.lifecycles} | ${m.completed} | ${m.wallS} | ${m.completedPerSecond} | ${m.lagP50S} / ${m.lagP99S} |`,
    ),
    '',
    ...report.clusterVsTuned.map(
      (r) =>
        `Cluster / tuned dev server, ${r.workers} worker(s): **${r.ratio}x** completions per second (target >= 0.8x)` +
        (r.pairs.length > 1 ? `: the median of ${r.pairs.length} pairs of runs (${r.pairs.join(', ')}).` : '.'),
    ),
    '',
    '| server | workers | window | 429s | most creates in a window | drain (s) | minimum (s) | target (s) | other project: last create / last completion (s) | limiter: tasks / events / runs / stalls / lost grants |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...report.burst.map(
      (b) =>
        `| ${b.server} | ${b.workers} | ${b.windowMs / 1000} s | ${b.rateLimited} of ${b.createCalls} | ${b.maxCreatesInWindow} | ${b.drainS} (${b.drainRatio}x) | ` +
        `${b.theoreticalMinS} | ${b.drainTargetS} | ${b.otherLastCreateS} / ${b.otherLastCompletionS} | ` +
        `${b.limiterA.workflowTasks} / ${b.limiterA.events} / ${b.limiterA.runs} / ${b.limiterA.stickyTimeouts + b.limiterA.failedTasks} / ${b.limiterA.lostGrants} |`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}

// ---- standalone -----------------------------------------------------------------------------------------

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function matrix(): Promise<void> {
  const { DevServer } = await import('../test/chaos/helpers');
  const cluster = { label: 'cluster (default settings)', address: flag('address') ?? '127.0.0.1:7633' };
  // A tuned dev server (DEV_SERVER_DYNAMIC_CONFIG), reused across this run's scenarios.
  const dev = await DevServer.start();
  try {
    const pairs = Number(flag('pairs') ?? 1);
    const report = await runUserPathReport(
      cluster,
      { label: 'dev server (tuned)', address: dev.address },
      undefined,
      pairs,
    );
    const dir = path.join(__dirname, 'results');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'user-path.json'), `${JSON.stringify(report, null, 2)}\n`);
    writeFileSync(path.join(dir, 'user-path.md'), userPathMarkdown(report));
    process.stdout.write(userPathMarkdown(report));
  } finally {
    await dev.stop();
  }
}

if (require.main === module && process.argv[2] === 'report') {
  matrix().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  });
} else if (require.main === module) {
  const kind = process.argv[2] === 'mixed' ? 'mixed' : 'burst';
  const address = flag('address') ?? process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7633';
  const target = { label: flag('label') ?? address, address };
  const workers = Number(flag('workers') ?? 1);
  const mixed: MixedOptions = {
    workers,
    warmUp: Number(flag('warm-up') ?? 0),
    ...(flag('exports') ? { exports: Number(flag('exports')) } : {}),
    ...(flag('agents') ? { agents: Number(flag('agents')) } : {}),
  };
  const encryption = flag('encryption') ?? 'off';
  const job: Promise<unknown> =
    kind !== 'mixed'
      ? runBurst(target, { workers, windowMs: parseDuration(flag('window') ?? '10s') })
      : encryption === 'both'
        ? runMixedEncryption(target, mixed)
        : encryption === 'on'
          ? runMixedEncrypted(target, mixed)
          : runMixed(target, mixed);
  job.then(
    (figures) => process.stdout.write(`${JSON.stringify(figures)}\n`),
    (err: unknown) => {
      process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
