// Runs the test files with Node's built-in runner (through tsx), so the runner's summary ends the output.
//   tsx scripts/run-tests.ts            unit + integration tests
//   tsx scripts/run-tests.ts --checks   the same, with typecheck, lint and format beside the set-up
//                                        (what `npm test` runs: a failed check runs no test; with FILEs,
//                                        the checks first)
//   tsx scripts/run-tests.ts --chaos    the fault-injection suite (`npm run chaos`)
//   tsx scripts/run-tests.ts FILE...    just those files (each file's harness starts what it needs)
//   tsx scripts/run-tests.ts --prepare FILE...   those files with a whole run's set-up and clean-up
//                                        (what `npm run test:node24` runs, scripts/node24.ts)
// A whole run first checks the system packages and prepares the machine (scripts/test-setup.ts), and
// stops what it started when it ends: pass, fail, Ctrl-C or SIGTERM (it then exits 130 or 143, after the
// clean-up). Then it prints the ten slowest files.
// Files run TEST_CONCURRENCY at a time (default 3: most files wait on servers and timers, not on the 2
// cores), each in a node --test process of its own (short parallel files in batches), scheduled by their
// lanes (scripts/test-lanes.ts, a marker on each file's first line): the cluster files first (two more at
// once: they mostly wait on the shared server); then the files that change the shared cluster, one after
// another, with the parallel files beside them (one more than TEST_CONCURRENCY: those files mostly wait on
// the cluster they restart) and in any slot no cluster file waits for; the alone files last, with nothing
// beside them. A slot that frees takes the longest file allowed, by the last run's times
// (test/typical-times.json on a fresh clone). Node's summary comes once, for all the node --test
// processes, after their output.
// A file never hangs the run: --test-force-exit ends each file's process once its tests are done (a
// worker or timer left open would otherwise keep it alive after its tests failed), --test-timeout
// fails a test or hook that does not finish, and each file's process ends itself a little after that
// timeout (scripts/test-file-deadline.mjs): Node 20's timeout also bounds the file as a whole, Node 24's
// no longer does. The timeout is far above the slowest file (TEST_TIMEOUT_MS overrides it, e.g. to prove
// the guard).
import { type ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:os';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as testSetup from './test-setup';
import {
  BATCH_ENV,
  type FileTime,
  fileTimes,
  type Job,
  nextJob,
  plannedWallMs,
  planJobs,
  type Run,
} from './test-lanes';

const ROOT = path.resolve(__dirname, '..');
/** 20 minutes: the slowest file (a full-size chaos file on the cluster) takes well under 10. */
const DEFAULT_TIMEOUT_MS = 20 * 60 * 1000;
/** How long after --test-timeout a file's process ends itself: its stuck test, if any, fails first. */
const FILE_DEADLINE_GRACE_MS = 5_000;
const DEFAULT_CONCURRENCY = 3;
const ARTIFACTS = path.join(ROOT, 'test-artifacts');
/** The last whole run's file times: the next run starts the long files first. */
const LAST_TIMES_FILE = path.join(ARTIFACTS, 'last-file-times.json');
/** Typical file times kept in the repository: a fresh clone's run starts the long files first too. */
const TYPICAL_TIMES_FILE = path.join(ROOT, 'test', 'typical-times.json');
const SLOWEST = 10;
/** Workflow bundles made once and read by every later file (DOCS_ADMIN_TEST_BUNDLE_CACHE= turns it off). */
const BUNDLE_CACHE = path.join(ARTIFACTS, 'workflow-bundles');
/** The one file node --test runs for a batch: it loads the batch's files (DOCS_ADMIN_TEST_BATCH). */
const BATCH_ENTRY = path.join(ROOT, 'scripts', 'test-batch.ts');

export function testsIn(dir: string): string[] {
  const full = path.join(ROOT, dir);
  if (!existsSync(full)) return [];
  return readdirSync(full)
    .filter((name) => name.endsWith('.test.ts'))
    .sort()
    .map((name) => path.join(dir, name));
}

/** A Ctrl-C or SIGTERM: passed on to the running node --test processes, and remembered; the clean-up still runs. */
const interruption: { signal?: NodeJS.Signals; children: Set<ChildProcess> } = { children: new Set() };

function onSignal(signal: NodeJS.Signals): void {
  if (!interruption.signal)
    console.error(`\nnpm test: ${signal}: ending the tests, then stopping what this run started`);
  interruption.signal ??= signal;
  for (const child of interruption.children) child.kill(signal);
}

/**
 * Keeps this process alive through a signal until its clean-up is done: the handlers stay for the whole
 * run (tsx's own handler exits the process once none is left), and an output closed by the signal (a
 * `| tail` killed with us) fails writes with EPIPE, which would otherwise end the process mid clean-up.
 */
function holdOnThroughSignals(): void {
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
}

/** Node's closing counts (tests, pass, fail, ...) of one node --test process (scripts/test-reporter.mjs). */
type Summary = Record<string, number>;

interface RunResult {
  code: number;
  times: FileTime[];
  summary: Summary;
}

/** What a node --test process left in a file: its lines, and the file removed. */
function takeFile(file: string): string {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  rmSync(file, { force: true });
  return text;
}

function parseSummary(text: string): Summary {
  try {
    return JSON.parse(text) as Summary;
  } catch {
    return {};
  }
}

/** Runs node --test on a run's files; resolves with its exit code, the files' times and its counts. */
async function runNodeTest(run: Run, id: string): Promise<RunResult> {
  if (run.files.length === 0 || interruption.signal) return { code: 0, times: [], summary: {} };
  const timeoutMs = Number(process.env.TEST_TIMEOUT_MS) || DEFAULT_TIMEOUT_MS;
  // Files of their own: a test that runs the runner itself (test/unit/run-tests.test.ts) has its own pid.
  const timings = path.join(ARTIFACTS, `test-file-timings-${process.pid}-${id}.tsv`);
  const summaryFile = path.join(ARTIFACTS, `test-summary-${process.pid}-${id}.json`);
  mkdirSync(ARTIFACTS, { recursive: true });
  for (const file of [timings, summaryFile]) rmSync(file, { force: true });
  // A batch of short files shares one process (scripts/test-batch.ts); a long file has its own.
  const batched = run.files.length > 1;
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--import',
      path.join(ROOT, 'scripts', 'test-timings.mjs'),
      '--import',
      path.join(ROOT, 'scripts', 'test-file-deadline.mjs'),
      '--import',
      path.join(ROOT, 'scripts', 'test-output-flush.mjs'),
      '--test',
      `--test-reporter=${path.join(ROOT, 'scripts', 'test-reporter.mjs')}`,
      '--test-reporter-destination=stdout',
      `--test-concurrency=${run.concurrency}`,
      '--test-force-exit',
      `--test-timeout=${timeoutMs}`,
      ...(batched ? [BATCH_ENTRY] : run.files),
    ],
    {
      cwd: ROOT,
      stdio: 'inherit',
      env: {
        // The workflow bundles every file and spawned worker of the run share (test/helpers/bundle-cache.ts).
        DOCS_ADMIN_TEST_BUNDLE_CACHE: BUNDLE_CACHE,
        ...process.env,
        DOCS_ADMIN_TEST_TIMINGS: timings,
        DOCS_ADMIN_TEST_SUMMARY: summaryFile,
        DOCS_ADMIN_TEST_FILE_DEADLINE_MS: String(timeoutMs + FILE_DEADLINE_GRACE_MS),
        [BATCH_ENV]: batched ? run.files.join('\n') : '',
      },
    },
  );
  interruption.children.add(child);
  const code = await new Promise<number>((resolve) =>
    child.once('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 128 + constants.signals[signal] : 1))),
  );
  interruption.children.delete(child);
  const times = fileTimes(takeFile(timings).split('\n'), Date.now());
  return { code, times, summary: parseSummary(takeFile(summaryFile)) };
}

function concurrency(): number {
  const asked = Number(process.env.TEST_CONCURRENCY);
  return Number.isInteger(asked) && asked > 0 ? asked : DEFAULT_CONCURRENCY;
}

function timesIn(file: string): Map<string, number> {
  try {
    return new Map(Object.entries(JSON.parse(readFileSync(file, 'utf8')) as Record<string, number>));
  } catch {
    return new Map();
  }
}

function describeJob(job: Job, n: number, of: number): string {
  const what = job.files.length === 1 ? job.files[0] : `${job.files.length} files (${job.files.join(', ')})`;
  return `npm test: [${n}/${of}] ${job.lane}: ${what}`;
}

/**
 * The jobs of scripts/test-lanes.ts, TEST_CONCURRENCY at a time: whenever one ends, nextJob picks the
 * next that may run beside those still running (a slot never waits for a stage's slowest file).
 */
async function runJobs(files: string[]): Promise<RunResult[]> {
  const previous = timesIn(LAST_TIMES_FILE);
  const typical = timesIn(TYPICAL_TIMES_FILE);
  const jobs = planJobs(files, previous, undefined, typical);
  const slots = concurrency();
  const planned = plannedWallMs(jobs, slots);
  const by = previous.size > 0 ? "the last run's times" : 'typical times (test/typical-times.json)';
  console.log(
    `\nnpm test: ${files.length} file(s) in ${jobs.length} process(es), ${slots} at a time; ` +
      `planned ${minutes(planned)} min of wall time, by ${by}`,
  );
  const pending = [...jobs];
  const running = new Set<Job>();
  const results: RunResult[] = [];
  let started = 0;
  await new Promise<void>((allDone) => {
    const startMore = () => {
      if (interruption.signal) pending.length = 0;
      for (let job = nextJob(pending, [...running], slots); job; job = nextJob(pending, [...running], slots)) {
        const current = job;
        pending.splice(pending.indexOf(current), 1);
        running.add(current);
        console.log(`\n${describeJob(current, ++started, jobs.length)}`);
        void runNodeTest({ what: current.lane, files: current.files, concurrency: 1 }, String(started))
          .catch((err: unknown): RunResult => {
            console.error(`npm test: ${current.files.join(', ')}: ${err instanceof Error ? err.message : String(err)}`);
            return { code: 1, times: [], summary: {} };
          })
          .then((result) => {
            results.push(result);
            running.delete(current);
            startMore();
          });
      }
      if (running.size === 0) allDone();
    };
    startMore();
  });
  return results;
}

const minutes = (ms: number) => (ms / 60_000).toFixed(1);

/** One summary of every node --test process, in node's words, after all their output. */
function printSummary(results: RunResult[], wallMs: number): void {
  if (results.length === 0) return;
  const total: Summary = {};
  for (const { summary } of results)
    for (const [key, n] of Object.entries(summary)) if (key !== 'duration_ms') total[key] = (total[key] ?? 0) + n;
  console.log(`\nnpm test: summary of its ${results.length} node --test run(s):`);
  for (const [key, n] of Object.entries({ ...total, duration_ms: wallMs })) console.log(`\u2139 ${key} ${n}`);
}

function printSlowest(times: FileTime[], wallMs: number): void {
  if (times.length < 2) return;
  const total = times.reduce((sum, r) => sum + r.ms, 0);
  console.log(
    `\nslowest test files (of ${times.length}, ${minutes(total)} min in all, ${minutes(wallMs)} min of wall time):`,
  );
  for (const { ms, file } of times.slice(0, SLOWEST))
    console.log(`  ${(ms / 1000).toFixed(1).padStart(6)} s  ${path.relative(ROOT, file)}`);
}

function saveTimes(times: FileTime[]): void {
  const byFile = Object.fromEntries(times.map(({ file, ms }) => [path.relative(ROOT, file), ms]));
  writeFileSync(LAST_TIMES_FILE, `${JSON.stringify(byFile, null, 2)}\n`);
}

/**
 * Runs the files and prints the slowest (`keepTimes`: an `npm test` run, whose times order the next);
 * the exit code, 128 + the signal's number once interrupted.
 */
async function runAndReport(files: string[], keepTimes: boolean): Promise<number> {
  const startedAt = Date.now();
  const results = await runJobs(files);
  const code = Math.max(0, ...results.map((r) => r.code));
  const times = results.flatMap((r) => r.times).sort((a, b) => b.ms - a.ms);
  printSummary(results, Date.now() - startedAt);
  printSlowest(times, Date.now() - startedAt);
  if (keepTimes && !interruption.signal && times.length > 0) saveTimes(times);
  return exitCode(code);
}

function exitCode(code: number): number {
  return interruption.signal ? 128 + constants.signals[interruption.signal] : code;
}

/**
 * The set-up and clean-up of a whole run: scripts/test-setup.ts, or the module DOCS_ADMIN_TEST_SETUP
 * names (the runner's own test, which must not touch the real cluster); with it, the files given run
 * as a whole run.
 */
function setupModule(): typeof testSetup {
  const standIn = process.env.DOCS_ADMIN_TEST_SETUP;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return standIn ? (require(path.resolve(ROOT, standIn)) as typeof testSetup) : testSetup;
}

async function main(args: string[]): Promise<number> {
  holdOnThroughSignals();
  const chaos = args.includes('--chaos');
  const named = args.filter((arg) => !arg.startsWith('--'));
  const files = chaos
    ? testsIn('test/chaos')
    : named.length > 0
      ? named
      : [...testsIn('test/unit'), ...testsIn('test/integration')];
  const setup = setupModule();
  const allTests = !chaos && named.length === 0;
  const wholeRun = allTests || chaos || args.includes('--prepare') || setup !== testSetup;
  const checking = () => (args.includes('--checks') ? setup.runChecks() : Promise.resolve(true));
  if (!wholeRun) return (await checking()) ? runAndReport(files, false) : 1;

  const missing = setup.missingPrerequisites();
  if (missing.length > 0) {
    for (const line of setup.describeMissing(missing)) console.error(line);
    return 1;
  }
  const log = (line: string) => console.log(line);
  let prepared: testSetup.Prepared = { started: [] };
  try {
    // The checks run beside the set-up: both are mostly one busy core (typecheck, lint, format; Go's
    // linker, PostgreSQL's start). A failed check runs no test; either way the set-up ends first, so
    // what it started is known and stopped. A signal during the set-up also lets it finish and runs no test.
    const [checked, preparing] = await Promise.allSettled([checking(), setup.prepareTestMachine(log)]);
    if (preparing.status === 'rejected') throw preparing.reason;
    prepared = preparing.value;
    if (checked.status === 'rejected' || !checked.value) return 1;
    return await runAndReport(files, allTests);
  } finally {
    await setup.finishTestRun(prepared, log);
  }
}

if (require.main === module)
  main(process.argv.slice(2)).then(
    (code) => process.exit(exitCode(code)),
    (err: unknown) => {
      console.error(`npm test: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(exitCode(1));
    },
  );
