// Rate-limit drain: a burst of agent jobs for one project plus a few for a second project, against the
// emulator with its window scaled down (default 100 per 10 s), through the per-project limiter
// workflow. Reports plain JSON: how many creates the API answered with 429, how long the burst took
// to drain compared with the theoretical minimum, and how long the other project waited.
//
//   const figures = await runRateLimitDrain({ jobs: 300, otherJobs: 10 });
//
// Standalone: `npx tsx bench/rate-limit-drain.ts [--jobs N] [--other N]` prints the JSON. Uses the
// server at TEMPORAL_ADDRESS when set, else starts a dev server for the run. DRAIN_DEBUG=1 also prints where the
// burst jobs' time went before their creates, window by window.
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { AdminApiClient } from '../src/api/client';
import { type EmulatorHandle, startEmulator } from '../emulator';
import { noopMetrics } from '../src/observability/metrics';
import { defaultMarginMs, theoreticalDrainMs } from '../src/policies/rate-window';
import type { AgentJobOptions } from '../src/shared/agent-job';
import { SearchAttr } from '../src/shared/search-attributes';
import { projectFairnessKey } from '../src/shared/fairness';
import { rateLimiterWorkflowId } from '../src/shared/rate-limiter';
import { createDocsAdminWorker, type DocsAdminWorker } from '../src/worker';
import { agentJob } from '../src/workflows';
import { createDevEnv, uniqueTaskQueue, workflowBundle } from '../test/helpers/temporal';
import { completionTimes } from './lib/completions';
import { type LimiterLoad, describeLimiterLoad, limiterLoad } from './lib/limiter-load';

export interface RateLimitDrainOptions {
  /** Jobs of the bursting project. Default 300. */
  jobs?: number;
  /** Jobs of the second project, started right after the burst. Default 10. */
  otherJobs?: number;
  /** AGENT_RATE_LIMIT of the worker and the emulator's limit. Default 100 per 10 s. */
  limit?: number;
  windowMs?: number;
  /** How long the emulator keeps a job active. Default 1000. */
  agentActiveMs?: number;
  /** Agent polling overrides (default: fast polling, so the figure measures admission, not polling). */
  poll?: AgentJobOptions['poll'];
  /** A Temporal environment to use (tests pass theirs); default createDevEnv(), torn down afterwards. */
  env?: TestWorkflowEnvironment;
  /** Progress lines; default stderr. */
  log?: (line: string) => void;
}

export interface RateLimitDrainFigures {
  jobs: number;
  otherJobs: number;
  limit: number;
  windowMs: number;
  marginMs: number;
  agentActiveMs: number;
  completed: number;
  failed: number;
  /** createAgentJob calls the emulator saw (every status). */
  createCalls: number;
  /** 429 answers to createAgentJob. */
  rateLimited: number;
  /** rateLimited / createCalls. */
  rateLimitedShare: number;
  /** Start of the burst to the last completion of the bursting project. */
  drainMs: number;
  /** Full windows the burst needs after the first one, plus one job's active time. */
  theoreticalMinMs: number;
  /** drainMs / theoreticalMinMs. */
  drainRatio: number;
  /** Start of the burst to the creation (= permit used) of the bursting project's last job. */
  lastCreateMs: number;
  /** Start of the burst to the bursting project's first create beyond one window's limit (its second window). */
  secondWindowCreateMs: number | null;
  /** Start of the burst to the bursting project's first and last create of its first window (how bunched it is). */
  firstWindowCreateMs: [number, number];
  burst: {
    /** Start of the burst to each of the bursting project's creates at the emulator, sorted. */
    createMs: number[];
    /** Start of the burst to each of its completions, sorted. */
    completionMs: number[];
  };
  /** The bursting project (its limiter is rateLimiterWorkflowId of it). */
  burstProject: string;
  /** What the burst cost the bursting project's limiter until its last create, read from its histories. */
  limiter: LimiterLoad;
  other: {
    /** Start of the burst to each of the second project's creates (its permit wait plus latency), sorted. */
    createMs: number[];
    /** Start of the burst to each of the second project's completions, sorted. */
    completionMs: number[];
    maxCreateMs: number;
    maxCompletionMs: number;
  };
}

const KEY = 'mint_bench_rate_limit_drain_key';

export async function runRateLimitDrain(options: RateLimitDrainOptions = {}): Promise<RateLimitDrainFigures> {
  const plan = planDrain(options);
  const rig = await setUp(plan, options.env);
  try {
    await warmUp(rig, plan);
    const burst = await runBurst(rig, plan);
    if (process.env.DRAIN_DEBUG) await logWhereTimeWent(rig, plan, burst);
    const figures = measure(rig, plan, burst);
    // Until the burst's last create: a quiet limiter's compaction after it is not the burst's.
    const { startedAt } = burst;
    const limiter = await limiterLoad(rig.env.client, rig.burstProject, startedAt, startedAt + figures.lastCreateMs);
    plan.log(describeLimiterLoad(limiter, "the bursting project's limiter, until its last create"));
    return { ...figures, limiter };
  } finally {
    await tearDown(rig);
  }
}

/** The options with their defaults. */
interface DrainPlan {
  jobs: number;
  otherJobs: number;
  limit: number;
  windowMs: number;
  agentActiveMs: number;
  poll: NonNullable<AgentJobOptions['poll']>;
  log: (line: string) => void;
}

function planDrain(options: RateLimitDrainOptions): DrainPlan {
  return {
    jobs: options.jobs ?? 300,
    otherJobs: options.otherJobs ?? 10,
    limit: options.limit ?? 100,
    windowMs: options.windowMs ?? 10_000,
    agentActiveMs: options.agentActiveMs ?? 1_000,
    poll: options.poll ?? { floorMs: 200, fraction: 0.5, capMs: 1_000 },
    log: options.log ?? ((line: string) => process.stderr.write(`${line}\n`)),
  };
}

/** What one run holds: the server, the emulator, the worker on this run's task queue, the projects. */
interface DrainRig {
  env: TestWorkflowEnvironment;
  ownEnv: boolean;
  emu: EmulatorHandle;
  api: AdminApiClient;
  taskQueue: string;
  burstProject: string;
  otherProject: string;
  warmUpProject: string;
  worker: DocsAdminWorker;
  running: Promise<void>;
}

async function setUp(plan: DrainPlan, givenEnv: TestWorkflowEnvironment | undefined): Promise<DrainRig> {
  const { limit, windowMs, agentActiveMs } = plan;
  const env = givenEnv ?? (await createDevEnv());
  const emu = await startEmulator({ agentActiveMs, rateLimit: { limit, windowMs } });
  const api = new AdminApiClient({ baseUrl: emu.url, apiKey: KEY });
  const taskQueue = uniqueTaskQueue('rate-limit-drain');
  const run = taskQueue.slice(-8);
  // The worker users run (createDocsAdminWorker: its pollers, slots and interceptors), on this run's task queue.
  const worker = await createDocsAdminWorker(
    {
      address: env.address,
      namespace: env.namespace ?? 'default',
      taskQueue,
      adminApiUrl: emu.url,
      adminApiKey: KEY,
      agentRateLimit: { limit, windowMs },
      metricsPort: 0,
    },
    {
      connection: env.nativeConnection,
      client: env.client,
      api,
      metrics: noopMetrics,
      workflowBundle: await workflowBundle(),
      metricsListen: false,
    },
  );
  return {
    env,
    ownEnv: !givenEnv,
    emu,
    api,
    taskQueue,
    burstProject: `drain-burst-${run}`,
    otherProject: `drain-other-${run}`,
    warmUpProject: `drain-warm-up-${run}`,
    worker,
    running: worker.run(),
  };
}

/**
 * A worker in service has run jobs before: one job of a third project loads both workflow threads,
 * the connections and the emulator's code paths, so the burst measures admission, not a cold start.
 */
async function warmUp({ env, emu, taskQueue, warmUpProject }: DrainRig, { poll }: DrainPlan): Promise<void> {
  await env.client.workflow.execute(agentJob, {
    taskQueue,
    workflowId: `drain-${warmUpProject}`,
    args: [{ projectId: warmUpProject, prompt: 'Warm-up job' }, { poll }],
  });
  emu.reset();
}

/** The burst's handles and, per job, ms from the burst's start to its completion (NaN when it failed). */
interface BurstRun {
  startedAt: number;
  burstHandles: WorkflowHandle[];
  burstDone: number[];
  otherDone: number[];
  failed: number;
}

async function runBurst({ env, taskQueue, burstProject, otherProject }: DrainRig, plan: DrainPlan): Promise<BurstRun> {
  const { poll } = plan;
  const startedAt = Date.now();
  const startAll = (projectId: string, count: number) =>
    Promise.all(
      Array.from({ length: count }, (_, i) =>
        env.client.workflow.start(agentJob, {
          taskQueue,
          workflowId: `drain-${projectId}-${i}`,
          args: [{ projectId, prompt: `Burst job ${i} of ${projectId}` }, { poll }],
          // As src/client.ts starts them: the project as a search attribute, fairness per project.
          typedSearchAttributes: [{ key: SearchAttr.projectId, value: projectId }],
          priority: { fairnessKey: projectFairnessKey(projectId) },
        }),
      ),
    );
  const burstHandles = await startAll(burstProject, plan.jobs);
  const otherHandles = await startAll(otherProject, plan.otherJobs);
  plan.log(`rate-limit-drain: started ${plan.jobs} + ${plan.otherJobs} jobs in ${Date.now() - startedAt} ms`);

  const [burst, other] = await Promise.all([
    completionTimes(burstHandles, startedAt),
    completionTimes(otherHandles, startedAt),
  ]);
  return {
    startedAt,
    burstHandles,
    burstDone: burst.doneMs,
    otherDone: other.doneMs,
    failed: burst.failed + other.failed,
  };
}

/** DRAIN_DEBUG: the milestones window by window, and the slowest jobs from create to completion (the tail). */
async function logWhereTimeWent({ env, emu, burstProject }: DrainRig, plan: DrainPlan, burst: BurstRun): Promise<void> {
  const { startedAt, burstHandles, burstDone } = burst;
  plan.log(
    await milestoneSummary(
      env,
      burstHandles.map((h) => h.workflowId),
      startedAt,
      plan.limit,
    ),
  );
  const createdAt = new Map(emu.jobs().map((j) => [j.prompt, Date.parse(j.createdAt) - startedAt]));
  const slowest = burstHandles
    .map((h, i) => ({
      id: h.workflowId,
      created: createdAt.get(`Burst job ${i} of ${burstProject}`) ?? Number.NaN,
      done: burstDone[i]!,
    }))
    .sort((a, b) => b.done - b.created - (a.done - a.created))
    .slice(0, 5);
  plan.log(`slowest create-to-completion: ${slowest.map((j) => `${j.id} ${j.created}->${j.done}`).join(', ')}`);
}

/** The figures, from the emulator's counters and jobs and the completion times. */
function measure(
  { emu, burstProject, otherProject }: DrainRig,
  plan: DrainPlan,
  burst: BurstRun,
): Omit<RateLimitDrainFigures, 'limiter'> {
  const { jobs, otherJobs, limit, windowMs, agentActiveMs } = plan;
  const { startedAt, burstDone, otherDone, failed } = burst;
  const counters = emu.counters();
  const createCalls = Object.values(counters.calls.createAgentJob ?? {}).reduce((a, b) => a + b, 0);
  const rateLimited = counters.calls.createAgentJob?.['429'] ?? 0;
  const sinceStart = (iso: string) => Date.parse(iso) - startedAt;
  const created = (projectId: string) =>
    emu
      .jobs()
      .filter((j) => j.projectId === projectId)
      .map((j) => sinceStart(j.createdAt))
      .sort((a, b) => a - b);
  const drainMs = Math.max(...burstDone.filter(Number.isFinite));
  const theoreticalMinMs = theoreticalDrainMs(jobs, { limit, windowMs }) + agentActiveMs;
  const burstCreates = created(burstProject);
  const otherCreates = created(otherProject);
  const otherCompletions = otherDone.filter(Number.isFinite).sort((a, b) => a - b);
  return {
    jobs,
    otherJobs,
    burstProject,
    limit,
    windowMs,
    marginMs: defaultMarginMs(windowMs),
    agentActiveMs,
    completed: burstDone.filter(Number.isFinite).length + otherCompletions.length,
    failed,
    createCalls,
    rateLimited,
    rateLimitedShare: createCalls === 0 ? 0 : rateLimited / createCalls,
    drainMs,
    theoreticalMinMs,
    drainRatio: Math.round((drainMs / theoreticalMinMs) * 1000) / 1000,
    lastCreateMs: Math.max(...burstCreates),
    secondWindowCreateMs: burstCreates[limit] ?? null,
    firstWindowCreateMs: [burstCreates[0] ?? Number.NaN, burstCreates[Math.min(limit, jobs) - 1] ?? Number.NaN],
    burst: { createMs: burstCreates, completionMs: burstDone.filter(Number.isFinite).sort((a, b) => a - b) },
    other: {
      createMs: otherCreates,
      completionMs: otherCompletions,
      maxCreateMs: Math.max(...otherCreates),
      maxCompletionMs: Math.max(...otherCompletions),
    },
  };
}

async function tearDown(rig: DrainRig): Promise<void> {
  const { env, burstProject, otherProject, warmUpProject } = rig;
  // The limiters would otherwise wait for this (now gone) task queue on a shared server.
  await Promise.all(
    [burstProject, otherProject, warmUpProject].map((p) =>
      env.client.workflow
        .getHandle(rateLimiterWorkflowId(p))
        .terminate('rate-limit-drain finished')
        .catch(() => undefined),
    ),
  );
  await rig.worker.close();
  await rig.running;
  await rig.api.close();
  await rig.emu.close();
  if (rig.ownEnv) await env.teardown();
}

/**
 * DRAIN_DEBUG: where a burst job's time goes before its create, window by window (ms since the burst
 * started, min / median / max over the jobs created in that window), from the jobs' histories.
 */
async function milestoneSummary(
  env: TestWorkflowEnvironment,
  workflowIds: string[],
  startedAt: number,
  limit: number,
): Promise<string> {
  const names = [
    'first task started',
    'first attempt started',
    'grant received',
    'sending attempt started',
    'sending attempt done',
  ] as const;
  const rows: number[][] = [];
  for (const id of workflowIds) {
    const events = (await env.client.workflow.getHandle(id).fetchHistory()).events ?? [];
    const at = (e: (typeof events)[number]) =>
      Number(e.eventTime!.seconds) * 1000 + Math.round((e.eventTime!.nanos ?? 0) / 1e6) - startedAt;
    const times = (pred: (e: (typeof events)[number]) => boolean) => events.filter(pred).map(at);
    const attempts = times((e) => !!e.activityTaskStartedEventAttributes);
    const done = times((e) => !!e.activityTaskCompletedEventAttributes);
    rows.push([
      times((e) => !!e.workflowTaskStartedEventAttributes)[0] ?? Number.NaN,
      attempts[0] ?? Number.NaN,
      times((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'permitGranted')[0] ?? Number.NaN,
      attempts[attempts.length - 1] ?? Number.NaN,
      done[done.length - 1] ?? Number.NaN,
    ]);
  }
  rows.sort((x, y) => x[4]! - y[4]!);
  const lines: string[] = [];
  for (let w = 0; w * limit < rows.length; w++) {
    const windowRows = rows.slice(w * limit, (w + 1) * limit);
    lines.push(`window ${w + 1} (${windowRows.length} jobs):`);
    names.forEach((name, i) => {
      const v = windowRows
        .map((r) => r[i]!)
        .filter(Number.isFinite)
        .sort((x, y) => x - y);
      lines.push(`  ${name.padEnd(18)} ${v[0]} / ${v[Math.floor(v.length / 2)]} / ${v[v.length - 1]}`);
    });
  }
  return lines.join('\n');
}

function argValue(name: string): number | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] !== undefined ? Number(process.argv[i + 1]) : undefined;
}

if (require.main === module) {
  runRateLimitDrain({ jobs: argValue('--jobs'), otherJobs: argValue('--other') })
    .then((figures) => {
      process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
    })
    .catch((err: unknown) => {
      process.stderr.write(`rate-limit-drain failed: ${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 1;
    });
}
