// Polling-efficiency benchmark: a deterministic, seeded simulation of the pure polling policies in
// src/workflows/polling.ts against fixed intervals and exponential backoff. Counts status calls per
// job and the detection lag (completion -> the poll that sees it) in simulated time; no wall clock.
//
//   npx tsx bench/polling-sim.ts [--jobs N] [--seed S]   prints the tables, writes bench/results/polling.*
import { type SimJob, makeAgentJob, makeExportJob } from './lib/jobs';
import { type SimPolicy, baselines, oursAgent, oursExport } from './lib/policies';
import { deriveSeed, mulberry32 } from './lib/prng';
import { simulateJob } from './lib/simulate';
import { mean, quantile } from './lib/stats';
import type { PolicyResult, PollingReport, ScenarioResult, TargetResult } from './lib/polling-report';

export type { PolicyResult, PollingReport, ScenarioResult, TargetResult } from './lib/polling-report';

const S = 1_000;
const MIN = 60 * S;
const H = 60 * MIN;
/** Runs at least this long are also reported on their own. */
const LONG_RUN_MS = 1 * H;

interface Scenario {
  name: string;
  description: string;
  withProgress: boolean;
  makeJob: (rng: () => number) => SimJob;
  ours: SimPolicy;
  targets: (ours: PolicyResult, byName: (name: string) => PolicyResult) => TargetResult[];
}

const target = (description: string, value: number, limit: number): TargetResult => ({
  description,
  value,
  limit,
  pass: value <= limit,
});

/**
 * Every shape family waits in the queue first, sometimes: 30 % of the jobs are queued for 1 s to 3 min
 * before they run (a queued job can start at any moment).
 */
const QUEUED = { queuedShare: 0.3, minQueuedMs: 1 * S, maxQueuedMs: 3 * MIN } as const;
const QUEUED_TEXT = '30 % queued first for 1 s..3 min';

const SCENARIOS: Scenario[] = [
  {
    name: 'mixed shapes',
    description: `Export jobs, running time log-uniform 15 s..3 h; ${QUEUED_TEXT}; progress shapes mixed evenly: linear with uneven rate, slow start, stall at 99 % (reached at 30-80 % of the run), big jumps.`,
    withProgress: true,
    makeJob: (rng) =>
      makeExportJob(rng, {
        minMs: 15 * S,
        maxMs: 3 * H,
        ...QUEUED,
        shapes: ['linear-noisy', 'slow-start', 'stall-99', 'jumps'],
      }),
    ours: oursExport,
    targets: (ours, by) => [
      target('calls / exp backoff calls', ours.callsMean / by('exp 1 s -> 60 s').callsMean, 1.25),
      target('lag p50 (s)', ours.lagP50Ms / S, 10),
      target('lag p99 (s)', ours.lagP99Ms / S, 60),
    ],
  },
  {
    name: 'steady linear',
    description: `Export jobs with steady linear progress (whole percentages), running time log-uniform 15 s..3 h; ${QUEUED_TEXT}.`,
    withProgress: true,
    makeJob: (rng) => makeExportJob(rng, { minMs: 15 * S, maxMs: 3 * H, ...QUEUED, shapes: ['linear'] }),
    ours: oursExport,
    targets: (ours, by) => [
      target('calls / fixed 10 s calls', ours.callsMean / by('fixed 10 s').callsMean, 0.25),
      target('lag p99 (s)', ours.lagP99Ms / S, 15),
    ],
  },
  {
    name: 'finishing at 100 %',
    description: `Export jobs with steady progress that reads 100 % for the last 1-2 % of the run before they complete (the last pages packaged), running time log-uniform 15 s..3 h; whole or one-decimal percentages (evenly); ${QUEUED_TEXT}. Runs of 1-3 h are also reported on their own.`,
    withProgress: true,
    makeJob: (rng) =>
      makeExportJob(rng, { minMs: 15 * S, maxMs: 3 * H, ...QUEUED, shapes: ['linear-finish'], decimals: [0, 1] }),
    ours: oursExport,
    targets: (ours, by) => [
      target('calls / fixed 10 s calls', ours.callsMean / by('fixed 10 s').callsMean, 0.25),
      target('lag p99 (s)', ours.lagP99Ms / S, 15),
      target('lag p99, runs of 1-3 h (s)', (ours.longLagP99Ms ?? Number.NaN) / S, 15),
    ],
  },
  {
    name: 'agent jobs',
    description: `Agent jobs (no progress signal), duration log-uniform 20 s..45 min; ${QUEUED_TEXT} (reported as active: an agent job has no queued status).`,
    withProgress: false,
    makeJob: (rng) => makeAgentJob(rng, { minMs: 20 * S, maxMs: 45 * MIN, ...QUEUED }),
    ours: oursAgent,
    targets: (ours, by) => [
      target('calls / fixed 10 s calls', ours.callsMean / by('fixed 10 s').callsMean, 0.5),
      target('lag p99 (s)', ours.lagP99Ms / S, 30),
    ],
  },
];

function runScenario(scenario: Scenario, jobs: number, seed: number): ScenarioResult {
  const jobRng = mulberry32(deriveSeed(seed, scenario.name, 'jobs'));
  const simJobs = Array.from({ length: jobs }, () => scenario.makeJob(jobRng));
  const queuedTimes = simJobs.filter((job) => job.queuedMs > 0).map((job) => job.queuedMs);
  const policies = [...baselines(), scenario.ours];
  // Every policy runs against the same jobs (queued phases included), so the ratios compare like with like.
  const results = policies.map((policy): PolicyResult => {
    const calls: number[] = [];
    const lags: number[] = [];
    const queuedLags: number[] = [];
    const longLags: number[] = [];
    simJobs.forEach((job, i) => {
      const random = mulberry32(deriveSeed(seed, scenario.name, policy.name, i));
      const run = simulateJob(job, policy, scenario.withProgress, random);
      calls.push(run.calls);
      lags.push(run.lagMs);
      if (job.queuedMs > 0) queuedLags.push(run.lagMs);
      if (job.runMs >= LONG_RUN_MS) longLags.push(run.lagMs);
    });
    return {
      name: policy.name,
      ours: policy.ours,
      callsMean: mean(calls),
      callsP99: quantile(calls, 0.99),
      lagP50Ms: quantile(lags, 0.5),
      lagP99Ms: quantile(lags, 0.99),
      lagMeanMs: mean(lags),
      queuedLagP99Ms: quantile(queuedLags, 0.99),
      longLagP50Ms: longLags.length > 0 ? quantile(longLags, 0.5) : null,
      longLagP99Ms: longLags.length > 0 ? quantile(longLags, 0.99) : null,
    };
  });
  const byName = (name: string): PolicyResult => {
    const found = results.find((r) => r.name === name);
    if (!found) throw new Error(`no policy named ${name}`);
    return found;
  };
  const ours = results.find((r) => r.ours)!;
  const targets = scenario.targets(ours, byName);
  return {
    name: scenario.name,
    description: scenario.description,
    jobs: {
      count: simJobs.length,
      queued: queuedTimes.length,
      queuedMinMs: queuedTimes.length > 0 ? Math.min(...queuedTimes) : 0,
      queuedMaxMs: queuedTimes.length > 0 ? Math.max(...queuedTimes) : 0,
      long: simJobs.filter((job) => job.runMs >= LONG_RUN_MS).length,
    },
    policies: results,
    targets,
    pass: targets.every((t) => t.pass),
  };
}

/** Runs the four scenarios; plain JSON out. */
export function runPollingBenchmark({ jobs = 1_000, seed = 42 }: { jobs?: number; seed?: number } = {}): PollingReport {
  const scenarios = SCENARIOS.map((s) => runScenario(s, jobs, seed));
  return { benchmark: 'polling', jobs, seed, scenarios, pass: scenarios.every((s) => s.pass) };
}

async function main(argv: string[]): Promise<void> {
  const arg = (flag: string): number | undefined => {
    const i = argv.indexOf(flag);
    const v = i >= 0 ? Number(argv[i + 1]) : Number.NaN;
    return Number.isFinite(v) ? v : undefined;
  };
  const { writeFile, mkdir } = await import('node:fs/promises');
  const path = await import('node:path');
  const { renderMarkdown, renderSvg, renderText } = await import('./lib/report');
  const report = runPollingBenchmark({ jobs: arg('--jobs') ?? 1_000, seed: arg('--seed') ?? 42 });
  console.log(renderText(report));
  const dir = path.join(__dirname, 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'polling.json'), `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(path.join(dir, 'polling.md'), renderMarkdown(report));
  await writeFile(path.join(dir, 'polling.svg'), renderSvg(report));
  console.log(`\nWrote ${path.relative(process.cwd(), dir)}/polling.{json,md,svg}`);
  if (!report.pass) process.exitCode = 1;
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
