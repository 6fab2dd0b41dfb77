// `npm run upgrade-check` (scripts/upgrade-check.ts starts it): the upgrade path of `npm run cluster`
// proven with work in flight. A cluster of its own (DOCS_ADMIN_CLUSTER_DIR, .data/upgrade-check; the
// cluster's usual ports) is made at the oldest release the project supports, its release record removed
// (a data folder from before the records), and one end-to-end file runs on it. Then the product's worker
// runs as two `npm run worker` processes beside the admin API emulator, a keeper applies bundles through
// a file sink, and before each upgrade step a wave of exports and agent jobs is started by type name with
// plain JSON; each step (ensureCluster with the next release: schema first, then that release's server)
// happens while the wave is in flight, the workers running through it. After the last step one more wave
// runs on the newest release. Nothing may be lost (every workflow completes with its own job's result),
// duplicated (one agent job per prompt, one export per domain at the API) or stuck (everything settles
// within its deadline; no workflow task failed; the keeper still refreshes after the last step). The
// end-to-end file runs again on the newest release. Last, the user's path: one `npm run cluster` on a
// fresh folder of the oldest release (no record, its server up) takes it through every step to the newest.
// Prints what it moved and how long each step took.
// It builds four server releases the first time (minutes each): not part of `npm test`.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { startEmulator, type EmulatorHandle } from '../../emulator';
import { keeperStatusQuery } from '../../src/shared/bundle-keeper';
import { WorkflowType } from '../../src/shared/workflow-types';
import { clusterStatus, ensureCluster, stopCluster, type UpgradeStep } from '../../scripts/cluster/control';
import { CLUSTER_ADDRESS, CLUSTER_DATA_DIR, CLUSTER_FILES, CLUSTER_NAMESPACE } from '../../scripts/cluster/layout';
import { isPostgresReady } from '../../scripts/cluster/postgres';
import { stopWebhookReceiver } from '../../scripts/cluster/webhooks';
import {
  DATA_DIR,
  ROOT,
  type ServerRelease,
  buildTemporalCli,
  ensureReleaseBinaries,
  findTemporalCli,
  serverReleases,
} from '../../scripts/tools';
import {
  WorkerProcess,
  checkOutcomes,
  connect,
  secretKey,
  settle,
  startLifecycles,
  until,
  type Lifecycles,
  type Settled,
} from '../chaos/helpers';
import {
  type AppliedLinks,
  agentRateLimit,
  allIds,
  chaosSinksFile,
  watchedKeeperDomain,
  startWatchedKeeper,
  sum,
  workerLogs,
} from '../chaos/scenarios';

const TASK_QUEUE = 'upgrade-check';
/** Exports and agent jobs of each wave (one wave before each step, one after the last). */
const WAVE = Number(process.env.UPGRADE_CHECK_WAVE || 20);
/** The end-to-end files run on the oldest and on the newest release. */
const E2E_FILES = (process.env.UPGRADE_CHECK_E2E ?? 'test/integration/cluster.test.ts').split(/\s+/).filter(Boolean);
const RATE = { limit: 10, windowMs: 5_000 };
/** How long the waves may take to settle after the last step before what is left counts as stuck. */
const SETTLE_DEADLINE_MS = 10 * 60_000;

const say = (line: string) => console.log(line);
const seconds = (ms: number) => Number((ms / 1000).toFixed(1));

interface Wave {
  name: string;
  release: string;
  lifecycles: Lifecycles;
  /** Of this wave, made at the API when its step began. */
  atStep?: { agentJobsCreated: number; exportsStarted: number };
}

interface StepFigures extends UpgradeStep {
  /** The whole ensureCluster call: binaries found, schema, the server switched, the namespace checked. */
  totalMs: number;
  /** Workflows of the run not yet closed when the step began (of every wave so far). */
  inFlightAtStep: number;
  keeperLinksDuringStep: number;
}

/** The data folder must be the check's own: it is deleted. */
function assertOwnDataFolder(): void {
  const own = process.env.DOCS_ADMIN_CLUSTER_DIR;
  assert.ok(
    own && path.resolve(own) !== path.join(DATA_DIR, 'cluster'),
    'the upgrade check runs in a data folder of its own (DOCS_ADMIN_CLUSTER_DIR, set by scripts/upgrade-check.ts)',
  );
}

/** Builds what is missing: the CLI (health checks, namespace setup) and every release's binaries, timed. */
async function buildAll(releases: ServerRelease[]): Promise<Record<string, number>> {
  if (!findTemporalCli()) await buildTemporalCli();
  const built: Record<string, number> = {};
  for (const release of releases) {
    const started = Date.now();
    await ensureReleaseBinaries(release);
    built[release.version] = seconds(Date.now() - started);
  }
  return built;
}

/** A fresh cluster at `release` in the check's data folder, refused when something else holds the ports. */
async function freshCluster(release: ServerRelease): Promise<void> {
  await stopCluster((line) => say(`  ${line} (left by an earlier check)`));
  const status = await clusterStatus();
  if (isPostgresReady() || status.server)
    throw new Error(
      `another cluster holds the cluster's ports (${CLUSTER_ADDRESS}): stop it first (npm run cluster -- --stop)`,
    );
  rmSync(CLUSTER_DATA_DIR, { recursive: true, force: true });
  say(`== a new cluster at Temporal server ${release.version} in ${path.relative(ROOT, CLUSTER_DATA_DIR)}`);
  const made = await ensureCluster({ release: release.version, log: (line) => say(`  ${line}`) });
  assert.equal(made.release, release.version);
  // As a data folder made before releases were recorded: the upgrade must find it to be 1.29.1's.
  rmSync(CLUSTER_FILES.serverRelease);
  say(`  removed ${path.basename(CLUSTER_FILES.serverRelease)}: the folder looks like one made before the records`);
}

/** Runs end-to-end files on the running cluster (`DOCS_ADMIN_CLUSTER_RELEASE` = its release); their time. */
async function runE2e(release: ServerRelease): Promise<number> {
  say(`== end to end on Temporal server ${release.version}: ${E2E_FILES.join(' ')}`);
  const env: NodeJS.ProcessEnv = { ...process.env, E2E_SERVER: 'cluster', DOCS_ADMIN_KEEP_CLUSTER: '1' };
  delete env.DOCS_ADMIN_SKIP_CLUSTER;
  if (release.current) delete env.DOCS_ADMIN_CLUSTER_RELEASE;
  else env.DOCS_ADMIN_CLUSTER_RELEASE = release.version;
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts', 'run-tests.ts'), ...E2E_FILES], {
    cwd: ROOT,
    env,
    stdio: 'inherit',
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 0, `the end-to-end files pass on server ${release.version}`);
  return seconds(Date.now() - started);
}

/** The server version the frontend reports. */
async function serverVersion(client: Client): Promise<string> {
  return (await client.connection.workflowService.getClusterInfo({})).serverVersion ?? 'unknown';
}

/** Workflows of the lifecycles that have not closed yet (visibility). */
async function openCount(client: Client): Promise<number> {
  let n = 0;
  for await (const wf of client.workflow.list({
    query: `TaskQueue = '${TASK_QUEUE}' AND ExecutionStatus = 'Running' AND WorkflowType IN ('${WorkflowType.agentJob}', '${WorkflowType.staticExport}')`,
  }))
    if (wf) n++;
  return n;
}

/** Settles every workflow, or fails naming those still open at the deadline (stuck). */
async function settleOrStuck(client: Client, waves: Wave[], emulator: EmulatorHandle): Promise<Settled[]> {
  const lifecycles = waves.map((w) => w.lifecycles);
  const ids = lifecycles.flatMap(allIds);
  const agents = lifecycles.flatMap((l) => l.agents);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      void openCount(client).then(
        (open) =>
          reject(
            new Error(`${open} workflows still open ${SETTLE_DEADLINE_MS / 60_000} min after the last step: stuck`),
          ),
        reject,
      );
    }, SETTLE_DEADLINE_MS);
  });
  try {
    return await Promise.race([settle(client, ids, { operator: { agents, jobs: () => emulator.jobs() } }), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Workflow tasks that failed (a non-determinism or a bug: must be none) and timed out (a server away). */
async function workflowTaskTrouble(client: Client, ids: string[]): Promise<{ failed: string[]; timedOut: number }> {
  const failed: string[] = [];
  let timedOut = 0;
  for (const id of ids) {
    const { events } = await client.workflow.getHandle(id).fetchHistory();
    for (const event of events ?? []) {
      if (event.workflowTaskFailedEventAttributes) failed.push(id);
      if (event.workflowTaskTimedOutEventAttributes) timedOut++;
    }
  }
  return { failed: [...new Set(failed)], timedOut };
}

/**
 * The user's path: one `npm run cluster` on a folder of the oldest release without a record (as every
 * folder made before the records), its server up, brings it to the newest release through every minor
 * version, saying each step. Returns its time and the step lines it printed.
 */
async function upgradeInOneRun(oldest: ServerRelease, newest: ServerRelease): Promise<{ s: number; steps: number }> {
  await stopCluster();
  rmSync(CLUSTER_DATA_DIR, { recursive: true, force: true });
  await ensureCluster({ release: oldest.version });
  rmSync(CLUSTER_FILES.serverRelease);
  say(`== one \`npm run cluster\` on a ${oldest.version} folder without a record, its server serving`);
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.DOCS_ADMIN_CLUSTER_RELEASE;
  const started = Date.now();
  const child = spawn('npm', ['run', '--silent', 'cluster'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const steps = out.split('\n').filter((line) => line.startsWith('Temporal upgrade'));
  for (const line of steps) say(`  ${line}`);
  assert.equal(code, 0, `npm run cluster upgraded the folder:\n${out}`);
  const serving = steps
    .filter((line) => / serves after /.test(line))
    .map((line) => /server (\S+) serves/.exec(line)?.[1]);
  assert.deepEqual(serving, releasesAfter(oldest), 'each minor version served in turn');
  const conn = await connect(CLUSTER_ADDRESS);
  try {
    assert.equal(await serverVersion(conn.client), newest.version);
  } finally {
    await conn.close();
  }
  return { s: seconds(Date.now() - started), steps: serving.length };
}

/** The releases after `oldest`, in order. */
function releasesAfter(oldest: ServerRelease): string[] {
  return serverReleases()
    .map((r) => r.version)
    .filter((v) => v !== oldest.version);
}

/** The workload that runs across the upgrades: the emulator, two worker processes, a keeper, the waves. */
interface Workload {
  emulator: EmulatorHandle;
  workers: WorkerProcess[];
  conn: Awaited<ReturnType<typeof connect>>;
  keeperId: string;
  applied: AppliedLinks;
  waves: Wave[];
  dir: string;
}

async function startWorkload(): Promise<Workload> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'docs-admin-upgrade-'));
  const emulator = await startEmulator({
    // Agent jobs that run for a while, so their polls go on across a step; keeper links of 30 s.
    agentActiveMs: 15_000,
    exportQueuedMs: 1_000,
    exportDurationMs: 8_000,
    bundleTtlMs: 30_000,
    rateLimit: RATE,
    retryAfterForm: 'none',
  });
  const workers: WorkerProcess[] = [];
  const conn = await connect(CLUSTER_ADDRESS);
  const keeperDomain = watchedKeeperDomain();
  const env = {
    KEEPER_SINKS_FILE: await chaosSinksFile(dir, keeperDomain),
    TEMPORAL_ADDRESS: CLUSTER_ADDRESS,
    TEMPORAL_NAMESPACE: CLUSTER_NAMESPACE,
    TEMPORAL_TASK_QUEUE: TASK_QUEUE,
    ADMIN_API_URL: emulator.url,
    ADMIN_API_KEY: secretKey('upgrade'),
    AGENT_RATE_LIMIT: agentRateLimit(RATE),
  };
  say('== two worker processes (npm run worker), the emulator, a keeper with a file sink');
  const workload = { emulator, workers, conn, keeperId: '', applied: [] as unknown as AppliedLinks, waves: [], dir };
  try {
    workers.push(...(await Promise.all([0, 1].map(() => WorkerProcess.start({ env })))));
    const { keeper, applied } = await startWatchedKeeper(conn.client, TASK_QUEUE, dir, keeperDomain);
    Object.assign(workload, { keeperId: keeper.workflowId, applied });
    await until(() => applied.length >= 1, 'the keeper to apply its first bundle', 120_000);
    return workload;
  } catch (err) {
    await stopWorkload(workload);
    throw err;
  }
}

/** Whatever is left of the workload stopped (the keeper terminated, the workers killed). */
async function stopWorkload(w: Workload): Promise<void> {
  if (w.keeperId)
    await w.conn.client.workflow
      .getHandle(w.keeperId)
      .terminate('upgrade check ended')
      .catch(() => undefined);
  await w.applied.stop?.();
  await Promise.all(w.workers.map((worker) => worker.kill('SIGKILL')));
  await w.conn.close().catch(() => undefined);
  await w.emulator.close();
  await rm(w.dir, { recursive: true, force: true });
}

/** A wave of exports and agent jobs, started by type name with plain JSON. */
async function startWave(w: Workload, name: string, release: string): Promise<Wave> {
  const lifecycles = await startLifecycles(w.conn.client, TASK_QUEUE, {
    exports: WAVE,
    agents: WAVE,
    projects: 5,
    tag: `upgrade-${name.replace(/\./g, '-')}-${Date.now().toString(36)}`,
    plain: true,
  });
  const wave: Wave = { name, release, lifecycles };
  w.waves.push(wave);
  return wave;
}

/** One step: a wave in flight (half its creates and exports made), then ensureCluster with the next release. */
async function upgradeStep(w: Workload, release: string, next: ServerRelease): Promise<StepFigures> {
  const { emulator } = w;
  const creates = () => sum(emulator.counters().agentJobsCreated);
  const before = { creates: creates(), exports: emulator.counters().exportsStarted };
  const wave = await startWave(w, `before-${next.version}`, release);
  await until(
    () => creates() - before.creates >= WAVE / 2 && emulator.counters().exportsStarted - before.exports >= WAVE / 2,
    `wave ${wave.name} in flight`,
    120_000,
  );
  wave.atStep = {
    agentJobsCreated: creates() - before.creates,
    exportsStarted: emulator.counters().exportsStarted - before.exports,
  };
  const inFlightAtStep = await openCount(w.conn.client);
  const linksBefore = w.applied.length;
  await w.conn.close();
  say(`== upgrade step: ${release} -> ${next.version} with ${inFlightAtStep} workflows in flight`);
  const started = Date.now();
  const result = await ensureCluster({ release: next.version, log: (line) => say(`  ${line}`) });
  const totalMs = Date.now() - started;
  assert.equal(result.upgrade.length, 1, `one minor version a step (${JSON.stringify(result.upgrade)})`);
  w.conn = await connect(CLUSTER_ADDRESS);
  assert.equal(await serverVersion(w.conn.client), next.version, `the server serves as ${next.version}`);
  assert.ok(
    w.workers.every((worker) => worker.running),
    `the workers ran through the step to ${next.version}`,
  );
  return { ...result.upgrade[0]!, totalMs, inFlightAtStep, keeperLinksDuringStep: w.applied.length - linksBefore };
}

/** What the waves and the keeper came to: nothing lost, duplicated or stuck, or a failed assertion. */
async function verify(w: Workload, linksAtLastStep: number) {
  const { client } = w.conn;
  say('== settling every wave');
  const settled = await settleOrStuck(client, w.waves, w.emulator);
  const lifecycles: Lifecycles = {
    exportIds: w.waves.flatMap((wave) => wave.lifecycles.exportIds),
    exportDomains: w.waves.flatMap((wave) => wave.lifecycles.exportDomains),
    agents: w.waves.flatMap((wave) => wave.lifecycles.agents),
  };
  const outcome = checkOutcomes(lifecycles, settled, w.emulator.jobs());
  const perDomain = new Map<string, number>();
  for (const job of w.emulator.exports()) perDomain.set(job.domain, (perDomain.get(job.domain) ?? 0) + 1);
  const duplicateExports = lifecycles.exportDomains.filter((d) => (perDomain.get(d) ?? 0) > 1);
  const trouble = await workflowTaskTrouble(client, [...allIds(lifecycles), w.keeperId]);
  // The keeper goes on after the last step: a bundle applied since, its status answers, it runs.
  await until(() => w.applied.length > linksAtLastStep, 'the keeper to apply a bundle on the newest release', 120_000);
  await w.applied.stop();
  const keeper = client.workflow.getHandle(w.keeperId);
  const keeperStatus = await keeper.query(keeperStatusQuery);
  const keeperRunning = (await keeper.describe()).status.name === 'RUNNING';

  assert.deepEqual(outcome.problems, [], 'nothing lost: every workflow completed with its own result');
  assert.equal(outcome.exportsCompleted, lifecycles.exportIds.length);
  assert.equal(outcome.agentsCompleted, lifecycles.agents.length);
  assert.equal(outcome.duplicates, 0, 'one agent job per agent workflow');
  assert.equal(w.emulator.jobs().length, lifecycles.agents.length, 'exactly one agent job per agent workflow');
  assert.deepEqual(duplicateExports, [], 'one export per domain');
  assert.deepEqual(trouble.failed, [], 'no workflow task failed across the upgrades');
  assert.ok(keeperRunning, 'the keeper runs on');
  assert.deepEqual(
    w.applied.filter((a) => !a.downloads),
    [],
    'every link the keeper applied downloads',
  );
  return {
    exportsStarted: lifecycles.exportIds.length,
    exportsCompleted: outcome.exportsCompleted,
    agentJobsStarted: lifecycles.agents.length,
    agentJobsCompleted: outcome.agentsCompleted,
    agentJobsAtApi: w.emulator.jobs().length,
    parked: outcome.agentsParked,
    rateLimited: w.emulator.counters().rateLimited,
    keeperLinksApplied: w.applied.length,
    keeperExports: keeperStatus.exportsDone,
    keeperRefreshes: keeperStatus.refreshesDone,
    lost: outcome.problems.length + outcome.agentsUnaccounted,
    duplicated: { agentJobs: outcome.duplicates, exports: duplicateExports.length },
    workflowTasksFailed: trouble.failed.length,
    workflowTasksTimedOut: trouble.timedOut,
  };
}

function report(figures: {
  totalS: number;
  buildS: Record<string, number>;
  steps: StepFigures[];
  moved: Awaited<ReturnType<typeof verify>>;
  e2eS: Record<string, number>;
  oneRun: { s: number; steps: number };
}): void {
  const steps = figures.steps.map((s) => ({
    step: `${s.from} -> ${s.to}`,
    schema: `temporal ${s.schema.temporal.join(' -> ')}, visibility ${s.schema.visibility.join(' -> ')}`,
    schemaS: seconds(s.schemaMs),
    serverSwitchS: seconds(s.serverMs),
    totalS: seconds(s.totalMs),
    inFlightAtStep: s.inFlightAtStep,
    keeperLinksDuringStep: s.keeperLinksDuringStep,
  }));
  const m = figures.moved;
  say('');
  say(`upgrade check passed in ${figures.totalS}s: ${JSON.stringify({ ...figures, steps })}`);
  say(`  builds (s): ${JSON.stringify(figures.buildS)}`);
  for (const s of steps)
    say(
      `  ${s.step}: schema ${s.schemaS}s (${s.schema}), server switched in ${s.serverSwitchS}s, step ${s.totalS}s; ` +
        `${s.inFlightAtStep} workflows in flight, ${s.keeperLinksDuringStep} keeper links applied during it`,
    );
  say(
    `  moved: ${m.exportsCompleted}/${m.exportsStarted} exports, ${m.agentJobsCompleted}/${m.agentJobsStarted} agent jobs ` +
      `(${m.agentJobsAtApi} jobs at the API), keeper ${m.keeperLinksApplied} links applied (${m.keeperExports} exports, ${m.keeperRefreshes} refreshes)`,
  );
  say(
    `  lost ${m.lost}, duplicated ${m.duplicated.agentJobs + m.duplicated.exports}, stuck 0 (workflow tasks failed ` +
      `${m.workflowTasksFailed}, timed out ${m.workflowTasksTimedOut}); end to end (s): ${JSON.stringify(figures.e2eS)}`,
  );
  say(`  one npm run cluster on a folder of the oldest release: ${figures.oneRun.steps} steps in ${figures.oneRun.s}s`);
}

export async function main(): Promise<void> {
  assertOwnDataFolder();
  const releases = serverReleases();
  assert.ok(releases.length >= 2, 'an upgrade path of at least two releases');
  const oldest = releases[0]!;
  const newest = releases.at(-1)!;
  say(
    `upgrade check: Temporal server ${releases.map((r) => r.version).join(' -> ')}, waves of ${WAVE} exports and ${WAVE} agent jobs`,
  );
  const started = Date.now();
  try {
    const buildS = await buildAll(releases);
    await freshCluster(oldest);
    const e2eS: Record<string, number> = { [oldest.version]: await runE2e(oldest) };
    const w = await startWorkload();
    let moved: Awaited<ReturnType<typeof verify>>;
    const steps: StepFigures[] = [];
    try {
      let release = oldest.version;
      for (const next of releases.slice(1)) {
        steps.push(await upgradeStep(w, release, next));
        release = next.version;
      }
      const linksAtLastStep = w.applied.length;
      await startWave(w, `on-${release}`, release);
      moved = await verify(w, linksAtLastStep);
    } catch (err) {
      for (const [name, text] of Object.entries(workerLogs(w.workers)))
        say(`--- ${name} (last lines)\n${text.split('\n').slice(-30).join('\n')}`);
      throw err;
    } finally {
      await stopWorkload(w);
    }
    e2eS[newest.version] = await runE2e(newest);
    const oneRun = await upgradeInOneRun(oldest, newest);
    report({ totalS: seconds(Date.now() - started), buildS, steps, moved, e2eS, oneRun });
  } finally {
    if (process.env.UPGRADE_CHECK_KEEP_CLUSTER !== '1') {
      if (await stopWebhookReceiver()) say('  stopped the webhook receiver');
      for (const line of await stopCluster()) say(`  stopped ${line}`);
    }
    if (existsSync(CLUSTER_DATA_DIR)) say(`  data and logs of the check's cluster: ${CLUSTER_DATA_DIR}`);
  }
}
