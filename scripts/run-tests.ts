// Runs the test files with Node's built-in runner (through tsx), so the runner's summary ends the output.
//   tsx scripts/run-tests.ts            unit + integration tests (what `npm test` runs)
//   tsx scripts/run-tests.ts --chaos    the fault-injection suite (`npm run chaos`)
//   tsx scripts/run-tests.ts FILE...    just those files (each file's harness starts what it needs)
// A whole run first checks the system packages and prepares the machine (scripts/test-setup.ts), and
// stops what it started when it ends: pass, fail, Ctrl-C or SIGTERM (it then exits 130 or 143, after the
// clean-up). Then it prints the ten slowest files.
// Files run in two lanes (scripts/test-lanes.ts, a marker on each file's first line): the parallel ones
// TEST_CONCURRENCY at a time (default 3: most files wait on servers and timers, not on the 2 cores),
// then the others one at a time, with nothing else running.
// A file never hangs the run: --test-force-exit ends each file's process once its tests are done (a
// worker or timer left open would otherwise keep it alive after its tests failed), and --test-timeout
// fails a test that does not finish. On Node 20 that timeout also bounds each file as a whole, so it
// is far above the slowest file (TEST_TIMEOUT_MS overrides it, e.g. to prove the guard).
import { type ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:os';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as testSetup from './test-setup';
import { type FileTime, fileTimes, type Lane, planLanes } from './test-lanes';

const ROOT = path.resolve(__dirname, '..');
/** 20 minutes: the slowest file (a full-size chaos file on the cluster) takes well under 10. */
const DEFAULT_TIMEOUT_MS = 20 * 60 * 1000;
const DEFAULT_CONCURRENCY = 3;
const ARTIFACTS = path.join(ROOT, 'test-artifacts');
// One file per run: a test that runs the runner itself (test/unit/run-tests.test.ts) has its own.
const TIMINGS_FILE = path.join(ARTIFACTS, `test-file-timings-${process.pid}.tsv`);
/** The last whole run's file times: the next run starts the long parallel files first. */
const LAST_TIMES_FILE = path.join(ARTIFACTS, 'last-file-times.json');
const SLOWEST = 10;

function testsIn(dir: string): string[] {
  const full = path.join(ROOT, dir);
  if (!existsSync(full)) return [];
  return readdirSync(full)
    .filter((name) => name.endsWith('.test.ts'))
    .sort()
    .map((name) => path.join(dir, name));
}

/** A Ctrl-C or SIGTERM: passed on to the running node --test, and remembered; the clean-up still runs. */
const interruption: { signal?: NodeJS.Signals; child?: ChildProcess } = {};

function onSignal(signal: NodeJS.Signals): void {
  if (!interruption.signal)
    console.error(`\nnpm test: ${signal}: ending the tests, then stopping what this run started`);
  interruption.signal ??= signal;
  interruption.child?.kill(signal);
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

/** Runs node --test on the files; resolves with its exit code and the files' times. */
async function runNodeTest(files: string[], concurrency: number): Promise<{ code: number; times: FileTime[] }> {
  if (files.length === 0 || interruption.signal) return { code: 0, times: [] };
  const timeoutMs = Number(process.env.TEST_TIMEOUT_MS) || DEFAULT_TIMEOUT_MS;
  mkdirSync(ARTIFACTS, { recursive: true });
  rmSync(TIMINGS_FILE, { force: true });
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--import',
      path.join(ROOT, 'scripts', 'test-timings.mjs'),
      '--test',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      `--test-concurrency=${concurrency}`,
      '--test-force-exit',
      `--test-timeout=${timeoutMs}`,
      ...files,
    ],
    { cwd: ROOT, stdio: 'inherit', env: { ...process.env, DOCS_ADMIN_TEST_TIMINGS: TIMINGS_FILE } },
  );
  interruption.child = child;
  const code = await new Promise<number>((resolve) =>
    child.once('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 128 + constants.signals[signal] : 1))),
  );
  interruption.child = undefined;
  const lines = existsSync(TIMINGS_FILE) ? readFileSync(TIMINGS_FILE, 'utf8').split('\n') : [];
  rmSync(TIMINGS_FILE, { force: true });
  return { code, times: fileTimes(lines, Date.now()) };
}

function concurrency(): number {
  const asked = Number(process.env.TEST_CONCURRENCY);
  return Number.isInteger(asked) && asked > 0 ? asked : DEFAULT_CONCURRENCY;
}

function lastTimes(): Map<string, number> {
  try {
    return new Map(Object.entries(JSON.parse(readFileSync(LAST_TIMES_FILE, 'utf8')) as Record<string, number>));
  } catch {
    return new Map();
  }
}

/** The parallel lane, then the lone files; the worst exit code and every file's time. */
async function runLanes(files: string[]): Promise<{ code: number; times: FileTime[] }> {
  const lanes = planLanes(files, lastTimes());
  const runs: [Lane, number][] = [
    ['parallel', concurrency()],
    ['alone', 1],
  ];
  let code = 0;
  const times: FileTime[] = [];
  for (const [lane, n] of runs) {
    if (lanes[lane].length === 0) continue;
    console.log(`\nnpm test: ${lanes[lane].length} file(s) ${lane === 'alone' ? 'one at a time' : `${n} at a time`}`);
    const run = await runNodeTest(lanes[lane], n);
    code = Math.max(code, run.code);
    times.push(...run.times);
  }
  return { code, times: times.sort((a, b) => b.ms - a.ms) };
}

function printSlowest(times: FileTime[], wallMs: number): void {
  if (times.length < 2) return;
  const total = times.reduce((sum, r) => sum + r.ms, 0);
  const min = (ms: number) => (ms / 60_000).toFixed(1);
  console.log(`\nslowest test files (of ${times.length}, ${min(total)} min in all, ${min(wallMs)} min of wall time):`);
  for (const { ms, file } of times.slice(0, SLOWEST))
    console.log(`  ${(ms / 1000).toFixed(1).padStart(6)} s  ${path.relative(ROOT, file)}`);
}

function saveTimes(times: FileTime[]): void {
  const byFile = Object.fromEntries(times.map(({ file, ms }) => [path.relative(ROOT, file), ms]));
  writeFileSync(LAST_TIMES_FILE, `${JSON.stringify(byFile, null, 1)}\n`);
}

/**
 * Runs the files and prints the slowest (`keepTimes`: an `npm test` run, whose times order the next);
 * the exit code, 128 + the signal's number once interrupted.
 */
async function runAndReport(files: string[], keepTimes: boolean): Promise<number> {
  const startedAt = Date.now();
  const { code, times } = await runLanes(files);
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
  const files = chaos
    ? testsIn('test/chaos')
    : args.length > 0
      ? args
      : [...testsIn('test/unit'), ...testsIn('test/integration')];
  const setup = setupModule();
  const wholeRun = chaos || args.length === 0 || setup !== testSetup;
  if (!wholeRun) return runAndReport(files, false);

  const missing = setup.missingPrerequisites();
  if (missing.length > 0) {
    for (const line of setup.describeMissing(missing)) console.error(line);
    return 1;
  }
  const log = (line: string) => console.log(line);
  let prepared: testSetup.Prepared = { started: [] };
  try {
    // A signal during the set-up lets it finish (what it starts is then known), runs no test, and cleans up.
    prepared = await setup.prepareTestMachine(log);
    return await runAndReport(files, args.length === 0);
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
