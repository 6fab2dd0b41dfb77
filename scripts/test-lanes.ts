// Which test files may run side by side. Each file says so in its first line:
//   // test-lane: parallel        it never touches the shared cluster (its own dev server, time-skipping
//                                server or emulator on free ports, or nothing at all): beside anything
//   // test-lane: cluster         it uses the shared cluster with task queues, ids and projects of its own:
//                                beside other files, never beside a cluster-alone file
//   // test-lane: cluster-alone   it changes the shared cluster (restarts or reconfigures it, adds or
//                                SIGKILLs a node): no other cluster file beside it, parallel files may be
//   // test-lane: alone           it holds machine-wide state or measures what a busy machine would skew:
//                                nothing beside it
// A file without the marker runs alone: a new file is safe until someone says otherwise. A run schedules
// them as it goes (nextJob): the cluster files first (more of them at once than the other lanes: they
// mostly wait on the server); then the cluster-alone files one by one, with the parallel files beside
// them (one more than the slots: a cluster-alone file mostly waits too); the alone files last; longest
// first throughout.
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

/**
 * One node --test process of a run's schedule: one file, or a batch of short parallel files one after another
 * in one process (scripts/test-batch.ts).
 */
export interface Job {
  lane: Lane;
  files: string[];
  /** Its expected time: the files' last times, or a guess by folder for a file never timed here. */
  ms: number;
}

/**
 * A file never timed here and not in the typical times: a unit file takes seconds, an integration file
 * half a minute (the long ones are in test/typical-times.json), a full-size chaos file minutes.
 */
export function guessMs(file: string): number {
  if (/(^|\/)test\/unit\//.test(file)) return 5_000;
  if (/(^|\/)test\/chaos\//.test(file)) return 120_000;
  return 30_000;
}

/** The variable that names a batch's files, one per line, to scripts/test-batch.ts (test-timings.mjs reads it too). */
export const BATCH_ENV = 'DOCS_ADMIN_TEST_BATCH';

/** Parallel files shorter than this share a process with others (a process of its own costs most of a second of CPU). */
const SHORT_MS = 10_000;
/** ... up to this long in all, so a batch never becomes a run's long tail. */
const BATCH_MS = 30_000;

/**
 * The jobs of a run, longest first: every file a process of its own, except short parallel files,
 * which go in batches (one file after another) of about BATCH_MS. A file's time is its last run's
 * (`previousMs`), else `typicalMs` (the typical times kept in the repository, for a fresh clone), else
 * guessMs.
 */
export function planJobs(
  files: string[],
  previousMs: ReadonlyMap<string, number> = new Map(),
  readFirstLine: (file: string) => string = firstLineOf,
  typicalMs: ReadonlyMap<string, number> = new Map(),
): Job[] {
  const jobs: Job[] = [];
  let batch: Job | undefined;
  const timed = files
    .map((file) => ({
      file,
      lane: laneOf(readFirstLine(file)),
      ms: previousMs.get(file) ?? typicalMs.get(file) ?? guessMs(file),
    }))
    .sort((a, b) => b.ms - a.ms);
  for (const { file, lane, ms } of timed) {
    if (lane !== 'parallel' || ms > SHORT_MS) {
      jobs.push({ lane, files: [file], ms });
      continue;
    }
    if (!batch || batch.ms + ms > BATCH_MS) {
      batch = { lane, files: [], ms: 0 };
      jobs.push(batch);
    }
    batch.files.push(file);
    batch.ms += ms;
  }
  return jobs.sort((a, b) => b.ms - a.ms);
}

/**
 * Cluster files wait on the shared server far more than they use the cores (a fifth to a third of one
 * core each, measured with /usr/bin/time in a whole run, where a time-skipping or browser file takes most
 * of one): while they run, this many more of them run at once. One slot stays one.
 */
export const CLUSTER_EXTRA_SLOTS = 2;

/**
 * A cluster-alone file mostly waits too, on the cluster it restarts or reconfigures (cluster-sso: a
 * fifth of a core over its minute and a half): while one runs, one more parallel file runs beside it.
 * Without it a whole run's last minutes left a quarter of the two cores idle (vmstat).
 */
export const CLUSTER_ALONE_EXTRA_SLOTS = 1;

/** How many jobs may run at once while a job of `lane` starts, beside the `running` lanes. */
export function slotsFor(lane: Lane, slots: number, running: ReadonlySet<Lane> = new Set()): number {
  const base = Math.max(1, slots);
  if (base === 1) return base;
  if (lane === 'cluster') return base + CLUSTER_EXTRA_SLOTS;
  if (lane === 'parallel' && running.has('cluster-alone')) return base + CLUSTER_ALONE_EXTRA_SLOTS;
  return base;
}

/**
 * The job to start next in a free slot, or undefined (none may start now). The cluster files first, on
 * the cluster as the run found it; then the cluster-alone files, the one chain that must run one by one,
 * back to back; the parallel files fill every other slot (held back while a cluster file waits for one,
 * so they are there to run beside the chain); the alone files last, with nothing beside them. Among the
 * jobs allowed, the longest (`pending` is longest first): a long file never starts last and ends the run
 * alone.
 */
export function nextJob(pending: readonly Job[], running: readonly Job[], slots: number): Job | undefined {
  if (running.some((job) => job.lane === 'alone')) return undefined;
  const busy = new Set(running.map((job) => job.lane));
  const clusterLeft = pending.some((job) => job.lane === 'cluster');
  const allowed = (job: Job): boolean => {
    if (running.length >= slotsFor(job.lane, slots, busy)) return false;
    switch (job.lane) {
      case 'cluster':
        return !busy.has('cluster-alone');
      case 'cluster-alone':
        return !clusterLeft && !busy.has('cluster') && !busy.has('cluster-alone');
      case 'parallel':
        return true;
      case 'alone':
        return running.length === 0 && pending.every((other) => other.lane === 'alone');
    }
  };
  const first = (lane: Lane) => pending.find((job) => job.lane === lane && allowed(job));
  return first('cluster') ?? first('cluster-alone') ?? pending.find(allowed);
}

/** The wall time of the jobs run `slots` at a time by nextJob, each taking its `ms`: what a run plans. */
export function plannedWallMs(jobs: readonly Job[], slots: number): number {
  const pending = [...jobs];
  const running: { job: Job; endsAt: number }[] = [];
  let now = 0;
  const next = () =>
    nextJob(
      pending,
      running.map((r) => r.job),
      slots,
    );
  for (;;) {
    for (let job = next(); job; job = next()) {
      pending.splice(pending.indexOf(job), 1);
      running.push({ job, endsAt: now + job.ms });
    }
    if (running.length === 0) return now;
    running.sort((a, b) => a.endsAt - b.endsAt);
    now = running.shift()!.endsAt;
  }
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
