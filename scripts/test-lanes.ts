// Which test files may run side by side. Each file says so in its first line:
//   // test-lane: parallel        it never touches the shared cluster (its own dev server, time-skipping
//                                server or emulator on free ports, or nothing at all): beside anything
//   // test-lane: cluster         it uses the shared cluster with task queues, ids and projects of its own:
//                                beside other files, never beside a cluster-alone file
//   // test-lane: cluster-alone   it changes the shared cluster (restarts or reconfigures it, adds or
//                                SIGKILLs a node): no other cluster file beside it, parallel files may be
//   // test-lane: alone           it holds machine-wide state or measures what a busy machine would skew:
//                                nothing beside it
// A file without the marker runs alone: a new file is safe until someone says otherwise.
import { readFileSync } from 'node:fs';

export type Lane = 'parallel' | 'cluster' | 'cluster-alone' | 'alone';

const MARKER = /^\/\/ test-lane: (parallel|cluster-alone|cluster|alone)(?=\s|$)/;

export function laneOf(firstLine: string): Lane {
  return (MARKER.exec(firstLine)?.[1] as Lane | undefined) ?? 'alone';
}

export function firstLineOf(file: string): string {
  return readFileSync(file, 'utf8').split('\n', 1)[0] ?? '';
}

/** One node --test process: its files, run `concurrency` at a time in this order. */
export interface Run {
  what: string;
  files: string[];
  concurrency: number;
}

/** The runs of a stage go side by side; the next stage starts when all of them have ended. */
export type Stage = Run[];

/**
 * The wall time of files run `concurrency` at a time in their order (node --test starts the next file
 * when one ends), each taking its `ms` (0 when unknown).
 */
export function runWallMs(files: string[], concurrency: number, ms: (file: string) => number): number {
  if (files.length === 0) return 0;
  const slots = Array.from({ length: Math.max(1, concurrency) }, () => 0);
  for (const file of files) {
    const first = slots.indexOf(Math.min(...slots));
    slots[first] = (slots[first] ?? 0) + ms(file);
  }
  return Math.max(...slots);
}

/** The planned wall time of the stages, from the files' previous times (unknown ones count 0). */
export function plannedWallMs(stages: Stage[], previousMs: ReadonlyMap<string, number>): number {
  const ms = (file: string) => previousMs.get(file) ?? 0;
  return stages.reduce(
    (sum, runs) => sum + Math.max(0, ...runs.map((run) => runWallMs(run.files, run.concurrency, ms))),
    0,
  );
}

/**
 * The parallel files that fit beside the cluster-alone files: longest first, each taken while the
 * `slots` left by the cluster-alone lane still end within its time. Files with no known time stay out.
 */
function besideClusterAlone(
  parallel: string[],
  budgetMs: number,
  slots: number,
  previousMs: ReadonlyMap<string, number>,
): string[] {
  const beside: string[] = [];
  if (slots < 1) return beside;
  const ms = (file: string) => previousMs.get(file) ?? Infinity;
  for (const file of parallel) if (runWallMs([...beside, file], slots, ms) <= budgetMs) beside.push(file);
  return beside;
}

/**
 * The stages of a run: (1) the cluster and parallel files, `concurrency` at a time; (2) the cluster-alone
 * files one at a time, with the parallel files that fit beside them in the other slots; (3) the alone
 * files one at a time. Files longest first by `previousMs` (the last whole run's times; new files
 * first), so a long file does not start last and end its stage alone. Empty runs and stages are left out.
 */
export function planRuns(
  files: string[],
  previousMs: ReadonlyMap<string, number> = new Map(),
  concurrency = 3,
  readFirstLine: (file: string) => string = firstLineOf,
): Stage[] {
  const lanes: Record<Lane, string[]> = { parallel: [], cluster: [], 'cluster-alone': [], alone: [] };
  for (const file of files) lanes[laneOf(readFirstLine(file))].push(file);
  const longestFirst = (list: string[]) =>
    [...list].sort((a, b) => (previousMs.get(b) ?? Infinity) - (previousMs.get(a) ?? Infinity));
  const clusterAloneMs = runWallMs(lanes['cluster-alone'], 1, (file) => previousMs.get(file) ?? 0);
  const beside = besideClusterAlone(longestFirst(lanes.parallel), clusterAloneMs, concurrency - 1, previousMs);
  const shared = longestFirst([...lanes.cluster, ...lanes.parallel.filter((file) => !beside.includes(file))]);
  const stages: Stage[] = [
    [{ what: 'cluster and parallel files', files: shared, concurrency }],
    [
      { what: 'cluster-alone files', files: lanes['cluster-alone'], concurrency: 1 },
      { what: 'parallel files', files: beside, concurrency: concurrency - 1 },
    ],
    [{ what: 'alone files', files: lanes.alone, concurrency: 1 }],
  ];
  return stages.map((runs) => runs.filter((run) => run.files.length > 0)).filter((runs) => runs.length > 0);
}

export interface FileTime {
  file: string;
  ms: number;
}

/**
 * Each file's time from the lines of scripts/test-timings.mjs (`start|end\t<epoch ms>\t<file>`), from
 * its process's start to its exit, slowest first. A file with no end line was killed (its timeout, or
 * an interrupted run): it counts until `endedAt`, the end of its run.
 */
export function fileTimes(lines: string[], endedAt: number): FileTime[] {
  const spans = new Map<string, { from: number; to?: number }>();
  for (const line of lines) {
    const [what, at, file] = line.split('\t');
    if (!file || (what !== 'start' && what !== 'end')) continue;
    const span = spans.get(file);
    if (what === 'start') spans.set(file, { from: Number(at), to: span?.to });
    else if (span) span.to = Number(at);
  }
  return [...spans]
    .map(([file, { from, to }]) => ({ file, ms: (to ?? Math.max(endedAt, from)) - from }))
    .sort((a, b) => b.ms - a.ms);
}

/**
 * Fails a test file marked `parallel` that reaches for the shared cluster (its tests call this first):
 * that lane runs beside the cluster-alone files, which restart or reconfigure the cluster under it.
 */
export function assertClusterLane(file = process.argv[1], readFirstLine = firstLineOf): void {
  if (!file || !/\.test\.[cm]?[jt]s$/.test(file) || laneOf(readFirstLine(file)) !== 'parallel') return;
  throw new Error(
    `${file} uses the shared cluster but is marked "// test-lane: parallel": mark it "// test-lane: cluster"`,
  );
}
