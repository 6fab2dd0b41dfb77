// `npm run bench`: the five benchmarks, one after another, and their results in bench/results/:
//   (1) polling efficiency (bench/polling-sim.ts: deterministic simulation; polling.{json,md,svg}),
//   (2) end-to-end throughput (bench/throughput.ts: dev server + emulator + worker process; throughput.svg),
//   (3) rate-limit drain (bench/rate-limit-drain.ts),
//   (4) the capacity model (bench/capacity.ts: per-lifecycle costs on the cluster at 127.0.0.1:7633,
//       `npm run cluster` first; capacity.{json,md}),
//   (5) publish latency (bench/publish-latency.ts: merge webhook to the new content deployed, on the cluster;
//       publish.{json,md}),
// then summary.json (every report), summary.md (every table) and the tables on stdout.
//
// Options (arguments or environment): --size N / BENCH_SIZE (throughput lifecycles, default 2000),
// --only polling,throughput,drain,capacity,publish / BENCH_ONLY, --out DIR / BENCH_OUT (default bench/results).
// Exit code 1 when a target is missed (the files are written anyway).
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runPollingBenchmark, type PollingReport } from './polling-sim';
import {
  renderMarkdown as renderPollingMarkdown,
  renderSvg as renderPollingSvg,
  renderText as renderPollingText,
} from './lib/report';
import { writeCapacityReport } from './capacity';
import type { CapacityReport } from './lib/capacity-derive';
import { runRateLimitDrain, type RateLimitDrainFigures } from './rate-limit-drain';
import { type PublishLatencyReport, writePublishLatencyReport } from './publish-latency';
import { runThroughputBenchmark, type RunFigures, type Target, type ThroughputReport, verdict } from './throughput';

const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** CPU seconds of a run as milliseconds per workflow (NaN when not measured). */
const msPerLifecycle = (seconds: number | null, f: RunFigures): number =>
  ((seconds ?? NaN) * 1000) / Math.max(1, f.workflows);

/**
 * CPU of the whole machine's part in a run (worker, server when started here, this process: the starts
 * and, for docs-admin, the emulator) per workflow: steadier than completions/s on shared cores.
 */
export function machineCpuMsPerLifecycle(f: RunFigures): number {
  const { serverSeconds, benchProcessSeconds } = f.otherCpu;
  return msPerLifecycle(f.worker.cpuSeconds + (serverSeconds ?? NaN) + benchProcessSeconds, f);
}

/** The product's CPU per lifecycle against the baseline's, by process. */
function cpuPerLifecycleLine({ baseline: b, docsAdmin: d }: ThroughputReport): string {
  const per = (seconds: number | null, f: RunFigures) => fmt(msPerLifecycle(seconds, f), 0);
  const [product, baseline] = [machineCpuMsPerLifecycle(d), machineCpuMsPerLifecycle(b)];
  return (
    `CPU per lifecycle, ms (docs-admin / baseline): ${fmt(product, 0)} / ${fmt(baseline, 0)} (${fmt(product / baseline, 2)}x); ` +
    `worker ${per(d.worker.cpuSeconds, d)} / ${per(b.worker.cpuSeconds, b)}, server ${per(d.otherCpu.serverSeconds, d)} / ${per(b.otherCpu.serverSeconds, b)}, ` +
    `this process (starts; the emulator) ${per(d.otherCpu.benchProcessSeconds, d)} / ${per(b.otherCpu.benchProcessSeconds, b)}.`
  );
}

export function renderThroughputMarkdown(r: ThroughputReport): string {
  const d = r.durations;
  const row = (name: string, f: RunFigures): string =>
    `| ${name} | ${f.workflows} | ${f.completed} | ${f.failed} | ${fmt(f.wallSeconds)} | **${fmt(f.completedPerSecond)}** | ${fmt(f.worker.peakRssMiB, 0)} | ${fmt(f.worker.cpuSeconds)} | ${fmt(f.worker.cpuPercent, 0)} % | ${fmt(f.otherCpu.serverSeconds ?? NaN)} | ${fmt(f.otherCpu.benchProcessSeconds)} | ${fmt(machineCpuMsPerLifecycle(f), 0)} |`;
  const out = [
    '# End-to-end throughput',
    '',
    `\`bench/throughput.ts\`: ${r.size} lifecycles in flight at once (half static exports, half agent jobs) on a Temporal dev server,`,
    `one worker process, against the emulator (agent active ${d.agentActiveMs / 1000} s, export ${d.exportQueuedMs / 1000} s queued + ${d.exportDurationMs / 1000} s running).`,
    'The baseline runs in the same run, on its own worker process and task queue (polled the same way), workflows with the same Temporal',
    'commands and activity options as the real ones: export = a start activity, status polls as local activities at exportPollDelay timers,',
    'a bundle activity; agent = a create activity, status polls as local activities at agentPollDelay timers. Its activities answer from an',
    "in-memory simulation of the emulator's jobs (no HTTP), and it leaves out the product's own extras: search attributes, current details,",
    'activity summaries, input validation, metrics, and the per-project rate limiter (permit request, grant signal, use report).',
    `Machine: ${r.machine.cpus} CPU (${r.machine.cpuModel}), ${r.machine.memoryGiB} GiB, Node ${r.machine.node}.`,
    r.server.startedHere
      ? `Server: \`temporal server start-dev\` (in memory) started by the benchmark, ${r.server.partitions} task queue partition(s).`
      : `Server: the one at ${r.server.address}.`,
    '',
    '| run | workflows | completed | failed | wall (s) | completed/s | worker peak RSS (MiB) | worker CPU (s) | worker CPU | server CPU (s) | this process CPU (s) | CPU ms per lifecycle |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    row('baseline (same shape, no HTTP)', r.baseline),
    row('docs-admin (HTTP to emulator)', r.docsAdmin),
    '',
    cpuPerLifecycleLine(r),
    '',
    `| per workflow | export (1x) | export (${d.longFactor}x) | agent (1x) | agent (${d.longFactor}x) |`,
    '|---|---:|---:|---:|---:|',
    `| API calls per job | ${fmt(r.docsAdmin.apiCallsPerJob.export, 2)} | ${fmt(r.long.apiCallsPerJob.export, 2)} | ${fmt(r.docsAdmin.apiCallsPerJob.agent, 2)} | ${fmt(r.long.apiCallsPerJob.agent, 2)} |`,
    `| history events (mean of a sample) | ${fmt(r.docsAdmin.historyEvents.export)} | ${fmt(r.long.historyEvents.export)} | ${fmt(r.docsAdmin.historyEvents.agent)} | ${fmt(r.long.historyEvents.agent)} |`,
    `| baseline status polls | ${fmt(r.baseline.pollsPerWorkflow.export, 2)} | | ${fmt(r.baseline.pollsPerWorkflow.agent, 2)} | |`,
    '',
    `The ${d.longFactor}x run: ${r.long.size} lifecycles, ${r.long.completed} completed, ${r.long.failed} failed.`,
    '',
    '| target | value | limit | result |',
    '|---|---:|---:|---|',
    ...r.targets.map((t) => `| ${t.name} | ${fmt(t.value, 2)} | ${t.op} ${fmt(t.limit, 2)} | ${verdict(t)} |`),
    '',
    ...r.targets.map((t) => `- ${t.name}: ${t.note}.`),
    '',
  ];
  return out.join('\n');
}

export function renderThroughputText(r: ThroughputReport): string {
  return renderThroughputMarkdown(r)
    .split('\n')
    .filter((line) => !/^\|[-:|]+\|$/.test(line))
    .map((line) => line.replace(/\*\*/g, ''))
    .join('\n');
}

interface Series {
  name: string;
  color: string;
  points: number[];
  dashed?: boolean;
}

/** One line chart: x = seconds (one point per `secondsPerPoint`), y = values; axis with ~5 ticks each way. */
function lineChart(
  x0: number,
  y0: number,
  w: number,
  h: number,
  title: string,
  yLabel: string,
  series: Series[],
  {
    secondsPerPoint = 1,
    xLabel = 'seconds since the first start',
    legendBelow = false,
  }: {
    secondsPerPoint?: number;
    xLabel?: string;
    /** Under the axis, two columns, instead of inside the plot. */ legendBelow?: boolean;
  } = {},
): string[] {
  const n = Math.max(2, ...series.map((s) => s.points.length));
  const maxY = niceMax(Math.max(1, ...series.flatMap((s) => s.points)));
  const sx = (i: number): number => x0 + (i / (n - 1)) * w;
  const sy = (v: number): number => y0 + h - (v / maxY) * h;
  const parts: string[] = [`<text x="${x0}" y="${y0 - 12}" font-size="13" font-weight="bold">${esc(title)}</text>`];
  for (let k = 0; k <= 4; k++) {
    const v = (maxY * k) / 4;
    const y = sy(v);
    parts.push(
      `<line x1="${x0}" y1="${y.toFixed(1)}" x2="${x0 + w}" y2="${y.toFixed(1)}" stroke="#e9ecef"/>`,
      `<text x="${x0 - 6}" y="${(y + 4).toFixed(1)}" font-size="10" text-anchor="end" fill="#555">${fmt(v, v >= 10 ? 0 : 1)}</text>`,
    );
  }
  const totalSeconds = (n - 1) * secondsPerPoint;
  const stepSeconds = niceStep(totalSeconds / 5);
  for (let t = 0; t <= totalSeconds + 1e-9; t += stepSeconds) {
    parts.push(
      `<text x="${sx(t / secondsPerPoint).toFixed(1)}" y="${y0 + h + 14}" font-size="10" text-anchor="middle" fill="#555">${fmt(t, 0)}</text>`,
    );
  }
  parts.push(
    `<line x1="${x0}" y1="${y0 + h}" x2="${x0 + w}" y2="${y0 + h}" stroke="#333"/>`,
    `<line x1="${x0}" y1="${y0}" x2="${x0}" y2="${y0 + h}" stroke="#333"/>`,
    `<text x="${x0 + w / 2}" y="${y0 + h + 30}" font-size="11" text-anchor="middle" fill="#333">${esc(xLabel)}</text>`,
    `<text x="${x0 - 42}" y="${y0 + h / 2}" font-size="11" text-anchor="middle" fill="#333" transform="rotate(-90 ${x0 - 42} ${y0 + h / 2})">${esc(yLabel)}</text>`,
  );
  for (const s of series) {
    if (s.points.length === 0) continue;
    const d = s.points.map((v, i) => `${i === 0 ? 'M' : 'L'}${sx(i).toFixed(1)},${sy(v).toFixed(1)}`).join(' ');
    parts.push(
      `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5 4"' : ''}/>`,
    );
  }
  series.forEach((s, i) => {
    const lx = legendBelow ? x0 + (i % 2) * (w / 2) : x0 + 10;
    const ly = legendBelow ? y0 + h + 46 + Math.floor(i / 2) * 16 : y0 + 6 + i * 16;
    parts.push(
      `<rect x="${lx}" y="${ly}" width="12" height="3" fill="${s.color}"/>`,
      `<text x="${lx + 18}" y="${ly + 5}" font-size="11">${esc(s.name)}</text>`,
    );
  });
  return parts;
}

function niceMax(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

function niceStep(v: number): number {
  if (v <= 1) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

/** Completions over time and worker RSS over time, baseline vs docs-admin. */
export function renderThroughputSvg(r: ThroughputReport): string {
  const width = 980;
  const height = 400;
  const verdicts = r.targets.map((t) => `${t.name}: ${fmt(t.value, 2)} ${t.op} ${fmt(t.limit, 2)} ${verdict(t)}`);
  const parts = [
    `<text x="20" y="26" font-size="15" font-weight="bold">End-to-end throughput: ${r.size} lifecycles in flight, one worker (${r.machine.cpus} CPU)</text>`,
    `<text x="20" y="44" font-size="11" fill="#555">baseline ${fmt(r.baseline.completedPerSecond)}/s, docs-admin ${fmt(r.docsAdmin.completedPerSecond)}/s (ratio ${fmt(r.ratio, 2)}); worker peak RSS ${fmt(r.docsAdmin.worker.peakRssMiB, 0)} MiB</text>`,
    ...lineChart(80, 90, 380, 220, 'workflows completed (cumulative)', 'completed', [
      {
        name: `baseline, same shape without HTTP (${fmt(r.baseline.completedPerSecond)}/s)`,
        color: '#868e96',
        points: [0, ...r.baseline.timeline],
      },
      {
        name: `docs-admin (${fmt(r.docsAdmin.completedPerSecond)}/s)`,
        color: '#1c7ed6',
        points: [0, ...r.docsAdmin.timeline],
      },
    ]),
    ...lineChart(570, 90, 380, 220, 'worker resident memory', 'RSS (MiB)', [
      {
        name: `baseline worker (peak ${fmt(r.baseline.worker.peakRssMiB, 0)} MiB)`,
        color: '#868e96',
        points: r.baseline.worker.rssTimelineMiB,
      },
      {
        name: `docs-admin worker (peak ${fmt(r.docsAdmin.worker.peakRssMiB, 0)} MiB)`,
        color: '#1c7ed6',
        points: r.docsAdmin.worker.rssTimelineMiB,
      },
    ]),
    ...verdicts.map(
      (line, i) =>
        `<text x="${20 + (i % 2) * 480}" y="${height - 40 + Math.floor(i / 2) * 14}" font-size="11" fill="${r.targets[i]!.pass ? '#2b8a3e' : '#c92a2a'}">${esc(line)}</text>`,
    ),
  ];
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

// ---- rate-limit drain (bench/rate-limit-drain.ts) ----------------------------------------------------------

/**
 * The targets for one drain run. The drain ratio is gated on the longest window of the run:
 * what a burst costs beyond the arithmetic is a fixed start-up time (submitting and starting 310
 * workflows on the machine), not a share of each window, so a short window only magnifies it; shorter
 * windows still report their ratio, marked as not gated.
 */
export function drainTargets(f: RateLimitDrainFigures, { gateRatio = true }: { gateRatio?: boolean } = {}): Target[] {
  const window = `${fmt(f.windowMs / 1000, 0)} s window`;
  return [
    {
      name: `429 share of creates (${window})`,
      value: f.rateLimitedShare * 100,
      limit: 1,
      op: '<=',
      pass: f.rateLimitedShare <= 0.01,
      note: '429 answers / create calls, in %',
    },
    {
      name: `drain / theoretical minimum (${window})`,
      value: f.drainRatio,
      limit: 1.1,
      op: '<=',
      pass: f.drainRatio <= 1.1,
      gated: gateRatio,
      note: 'burst start to its last completion / (full windows after the first + one job)',
    },
    {
      name: `other project created before the burst's second window (${window})`,
      value: f.other.maxCreateMs / 1000,
      limit: (f.secondWindowCreateMs ?? 0) / 1000,
      op: '<',
      pass: f.secondWindowCreateMs !== null && f.other.maxCreateMs < f.secondWindowCreateMs,
      note: "the second project's last create (s) vs the burst's first create of its second window (s)",
    },
    {
      name: `lifecycles lost or failed (${window})`,
      value: f.failed + (f.jobs + f.otherJobs - f.completed - f.failed),
      limit: 0,
      op: '<=',
      pass: f.failed === 0 && f.completed === f.jobs + f.otherJobs,
      note: '',
    },
  ];
}

/** Every run's targets, the ratio gated on the longest window. */
export function drainRunTargets(runs: readonly RateLimitDrainFigures[]): Target[] {
  const longest = Math.max(...runs.map((f) => f.windowMs));
  return runs.flatMap((f) => drainTargets(f, { gateRatio: f.windowMs === longest }));
}

export function renderDrainMarkdown(runs: RateLimitDrainFigures[]): string {
  const s = (ms: number): string => fmt(ms / 1000, 1);
  const first = runs[0]!;
  const targets = drainRunTargets(runs);
  return [
    '# Rate-limit drain',
    '',
    `\`bench/rate-limit-drain.ts\`: a burst of ${first.jobs} agent jobs for one project, then ${first.otherJobs} for a second project, through the`,
    `per-project limiter workflow, against the emulator enforcing ${first.limit} creates per window (the worker's AGENT_RATE_LIMIT is the same),`,
    `one run per window length, on a worker that has run one job before (as one in service has). Jobs stay active ${s(first.agentActiveMs)} s.`,
    'Overhead is the drain beyond the theoretical minimum: the first create after the burst starts (310 workflow starts and',
    "first tasks), the first window's spread (which every later window mirrors: a slot frees one window after its use), the margins,",
    'and the tail from the last create to the last completion (the job itself plus polling on a loaded machine). It stays about',
    "the same whatever the window, so the ratio tends to 1 as the window grows towards the API's hour; the ratio target is gated on",
    'the longest window run, and the shorter ones show how much the fixed cost weighs there.',
    '',
    '| window (s) | jobs | completed | create calls | 429 answers | drain (s) | theoretical min (s) | drain / min | overhead (s) | first create (s) | first window spread (s) | last create (s) | tail (s) | other project: max create (s) / completion (s) |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...runs.map(
      (f) =>
        `| ${s(f.windowMs)} | ${f.jobs} + ${f.otherJobs} | ${f.completed} | ${f.createCalls} | ${f.rateLimited} | ${s(f.drainMs)} | ${s(f.theoreticalMinMs)} | ${fmt(f.drainRatio, 2)} | ` +
        `${s(f.drainMs - f.theoreticalMinMs)} | ${s(f.firstWindowCreateMs[0])} | ${s(f.firstWindowCreateMs[1] - f.firstWindowCreateMs[0])} | ${s(f.lastCreateMs)} | ${s(f.drainMs - f.lastCreateMs)} | ` +
        `${s(f.other.maxCreateMs)} / ${s(f.other.maxCompletionMs)} |`,
    ),
    '',
    '| target | value | limit | result |',
    '|---|---:|---:|---|',
    ...targets.map((t) => `| ${t.name} | ${fmt(t.value, 2)} | ${t.op} ${fmt(t.limit, 2)} | ${verdict(t)} |`),
    '',
  ].join('\n');
}

/** Cumulative count of `times` (ms) at each of `points` steps of `stepMs`, from 0. */
function cumulative(times: readonly number[], stepMs: number, points: number): number[] {
  const sorted = [...times].sort((a, b) => a - b);
  let seen = 0;
  return Array.from({ length: points }, (_, i) => {
    while (seen < sorted.length && sorted[seen]! <= i * stepMs) seen += 1;
    return seen;
  });
}

/**
 * One panel per drain run: the bursting project's creates and completions over time against what the
 * API allows (limit per window, from the first create), and the second project's creates.
 */
export function renderDrainSvg(runs: readonly RateLimitDrainFigures[]): string {
  const panelW = 440;
  const width = 40 + runs.length * (panelW + 110);
  const height = 380;
  const parts: string[] = [
    `<text x="20" y="26" font-size="15" font-weight="bold">Rate-limit drain: ${runs[0]?.jobs ?? 0} + ${runs[0]?.otherJobs ?? 0} agent jobs, ${runs[0]?.limit ?? 0} creates per window</text>`,
  ];
  runs.forEach((f, i) => {
    const points = 81;
    const stepMs = Math.max(f.drainMs, f.theoreticalMinMs) / (points - 1);
    const firstCreate = f.burst.createMs[0] ?? 0;
    const allowance = Array.from({ length: points }, (_, k) => {
      const t = k * stepMs;
      return t < firstCreate ? 0 : Math.min(f.jobs, f.limit * (Math.floor((t - firstCreate) / f.windowMs) + 1));
    });
    const w = fmt(f.windowMs / 1000, 0);
    parts.push(
      ...lineChart(
        90 + i * (panelW + 110),
        80,
        panelW,
        220,
        `${w} s window: drain ${fmt(f.drainMs / 1000)} s, ${fmt(f.drainRatio, 2)}x the minimum, ${f.rateLimited} answers of 429`,
        'jobs',
        [
          { name: `API allows (${f.limit} per ${w} s)`, color: '#adb5bd', points: allowance, dashed: true },
          { name: 'burst project: created', color: '#1c7ed6', points: cumulative(f.burst.createMs, stepMs, points) },
          {
            name: 'burst project: completed',
            color: '#2b8a3e',
            points: cumulative(f.burst.completionMs, stepMs, points),
          },
          { name: 'other project: created', color: '#e8590c', points: cumulative(f.other.createMs, stepMs, points) },
        ],
        { secondsPerPoint: stepMs / 1000, xLabel: 'seconds since the burst started', legendBelow: true },
      ),
    );
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

// ---- main ------------------------------------------------------------------------------------------------------

export interface BenchSummary {
  generatedAt: string;
  polling?: PollingReport;
  throughput?: ThroughputReport;
  drain?: RateLimitDrainFigures[];
  capacity?: CapacityReport;
  publish?: PublishLatencyReport;
  pass: boolean;
}

function argValue(argv: string[], flag: string): string | undefined {
  const i = argv.indexOf(flag);
  return i >= 0 ? argv[i + 1] : argv.find((a) => a.startsWith(`${flag}=`))?.slice(flag.length + 1);
}

/** Demotes Markdown headings one level (each report's title becomes a section of the summary). */
const demote = (markdown: string): string => markdown.replace(/^(#+) /gm, '#$1 ');

/** The header comment's usage, for --help. */
const USAGE = `npm run bench [-- options]: the five benchmarks, one after another, and their results in bench/results/.
  --size N        throughput lifecycles (BENCH_SIZE; default 2000)
  --only LIST     polling,throughput,drain,capacity,publish (BENCH_ONLY; default all five;
                  capacity and publish need the cluster: npm run cluster)
  --out DIR       where the results go (BENCH_OUT; default bench/results)
Environment only: BENCH_PARTITIONS (throughput's task queue partitions, default 1),
BENCH_DRAIN_WINDOWS (drain windows in ms, default 10000,60000).
Exit code 1 when a target is missed (the files are written anyway).`;

/** (5) publish latency: runs it and writes its report; its Markdown and verdict join the summary's. */
async function publishSection(out: string, sections: string[], passes: boolean[]): Promise<PublishLatencyReport> {
  console.log('== (5) publish latency, merge to deployment, on the cluster at 127.0.0.1:7633 ==');
  const { report, markdown } = await writePublishLatencyReport(out);
  console.log(markdown, '\n');
  sections.push(demote(markdown), '');
  passes.push(report.pass);
  return report;
}

/** The options of a run from argv and the environment. */
function benchOptions(argv: string[]): { size: number; only: Set<string>; out: string } {
  return {
    size: Number(argValue(argv, '--size') ?? process.env.BENCH_SIZE ?? 2000),
    only: new Set(
      (argValue(argv, '--only') ?? process.env.BENCH_ONLY ?? 'polling,throughput,drain,capacity,publish')
        .split(',')
        .map((s) => s.trim()),
    ),
    out: path.resolve(argValue(argv, '--out') ?? process.env.BENCH_OUT ?? path.join(__dirname, 'results')),
  };
}

async function main(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE);
    return;
  }
  const { size, only, out } = benchOptions(argv);
  await mkdir(out, { recursive: true });

  const summary: BenchSummary = { generatedAt: new Date().toISOString(), pass: true };
  const sections: string[] = [];
  const passes: boolean[] = [];

  if (only.has('polling')) {
    console.log('== (1) polling efficiency ==');
    const report = runPollingBenchmark();
    await writeFile(path.join(out, 'polling.json'), `${JSON.stringify(report, null, 2)}\n`);
    await writeFile(path.join(out, 'polling.md'), renderPollingMarkdown(report));
    await writeFile(path.join(out, 'polling.svg'), renderPollingSvg(report));
    console.log(renderPollingText(report), '\n');
    summary.polling = report;
    sections.push(demote(renderPollingMarkdown(report)), '![Polling efficiency](polling.svg)', '');
    passes.push(report.pass);
  }

  if (only.has('throughput')) {
    console.log(`== (2) end-to-end throughput, ${size} lifecycles ==`);
    const partitions = Number(process.env.BENCH_PARTITIONS || 1);
    const report = await runThroughputBenchmark({ size, partitions });
    await writeFile(path.join(out, 'throughput.json'), `${JSON.stringify(report, null, 2)}\n`);
    await writeFile(path.join(out, 'throughput.svg'), renderThroughputSvg(report));
    console.log(renderThroughputText(report), '\n');
    summary.throughput = report;
    sections.push(demote(renderThroughputMarkdown(report)), '![End-to-end throughput](throughput.svg)', '');
    passes.push(report.pass);
  }

  if (only.has('drain')) {
    // The 100 per 10 s, and a window six times longer: the same fixed costs, a truer ratio.
    const windows = (process.env.BENCH_DRAIN_WINDOWS ?? '10000,60000').split(',').map(Number);
    const runs: RateLimitDrainFigures[] = [];
    for (const windowMs of windows) {
      console.log(`== (3) rate-limit drain, 100 per ${windowMs / 1000} s ==`);
      runs.push(await runRateLimitDrain({ windowMs }));
    }
    const markdown = renderDrainMarkdown(runs);
    console.log(markdown, '\n');
    await writeFile(path.join(out, 'drain.svg'), renderDrainSvg(runs));
    summary.drain = runs;
    sections.push(demote(markdown), '![Rate-limit drain](drain.svg)', '');
    passes.push(drainRunTargets(runs).every((t) => t.pass || t.gated === false));
  }

  if (only.has('capacity')) {
    console.log('== (4) capacity model, on the cluster at 127.0.0.1:7633 ==');
    const { report, markdown } = await writeCapacityReport(out);
    console.log(markdown, '\n');
    summary.capacity = report;
    sections.push(demote(markdown), '');
  }

  if (only.has('publish')) summary.publish = await publishSection(out, sections, passes);

  summary.pass = passes.every(Boolean);
  const markdown = [
    '# Benchmark summary',
    '',
    `Generated ${summary.generatedAt} by \`npm run bench\`. Overall: **${summary.pass ? 'all targets met' : 'some targets missed'}**.`,
    '',
    ...sections,
  ].join('\n');
  await writeFile(path.join(out, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  await writeFile(path.join(out, 'summary.md'), markdown);
  console.log(`Wrote ${path.relative(process.cwd(), out) || '.'}/summary.{json,md} and the charts`);
  console.log(summary.pass ? 'All targets met.' : 'Some targets were MISSED (see the tables above).');
  if (!summary.pass) process.exitCode = 1;
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
