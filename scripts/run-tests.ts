// Runs the test files with Node's built-in runner (through tsx), so the runner's summary ends the output.
//   tsx scripts/run-tests.ts            unit + integration tests (what `npm test` runs)
//   tsx scripts/run-tests.ts --chaos    the fault-injection suite (`npm run chaos`)
//   tsx scripts/run-tests.ts FILE...    just those files (each file's harness starts what it needs)
// A whole run first checks the system packages and prepares the machine (scripts/test-setup.ts), and
// stops what it started when it ends, pass or fail; then it prints the ten slowest files. (A Ctrl-C of
// `npm test` was seen to end this process before its clean-up: the cluster then stays up.)
// A file never hangs the run: --test-force-exit ends each file's process once its tests are done (a
// worker or timer left open would otherwise keep it alive after its tests failed), and --test-timeout
// fails a test that does not finish. On Node 20 that timeout also bounds each file as a whole, so it
// is far above the slowest file (TEST_TIMEOUT_MS overrides it, e.g. to prove the guard).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { describeMissing, finishTestRun, missingPrerequisites, type Prepared, prepareTestMachine } from './test-setup';

const ROOT = path.resolve(__dirname, '..');
/** 20 minutes: the slowest file (a full-size chaos file on the cluster) takes well under 10. */
const DEFAULT_TIMEOUT_MS = 20 * 60 * 1000;
// One file per run: a test that runs the runner itself (test/unit/run-tests.test.ts) has its own.
const TIMINGS_FILE = path.join(ROOT, 'test-artifacts', `test-file-timings-${process.pid}.tsv`);
const SLOWEST = 10;

function testsIn(dir: string): string[] {
  const full = path.join(ROOT, dir);
  if (!existsSync(full)) return [];
  return readdirSync(full)
    .filter((name) => name.endsWith('.test.ts'))
    .sort()
    .map((name) => path.join(dir, name));
}

/** Runs node --test on the files; resolves with its exit code. Ctrl-C and SIGTERM reach it, then us. */
function runNodeTest(files: string[]): Promise<number> {
  const timeoutMs = Number(process.env.TEST_TIMEOUT_MS) || DEFAULT_TIMEOUT_MS;
  mkdirSync(path.dirname(TIMINGS_FILE), { recursive: true });
  rmSync(TIMINGS_FILE, { force: true });
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--test',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      `--test-reporter=${path.join(ROOT, 'scripts', 'test-timings.mjs')}`,
      '--test-reporter-destination=stdout',
      '--test-concurrency=1',
      '--test-force-exit',
      `--test-timeout=${timeoutMs}`,
      ...files,
    ],
    { cwd: ROOT, stdio: 'inherit', env: { ...process.env, DOCS_ADMIN_TEST_TIMINGS: TIMINGS_FILE } },
  );
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      resolve(code ?? (signal === 'SIGINT' ? 130 : 1));
    });
  });
}

/**
 * Each file's time, from the reporter's `<epoch ms>\t<file>` lines: files run one at a time, so a file
 * runs from the previous file's last finished test (or the run's start) to its own last one.
 */
export function fileTimes(lines: string[], runStartedAt: number): { file: string; ms: number }[] {
  const spans = new Map<string, { from: number; to: number }>();
  let previous = runStartedAt;
  let current: string | undefined;
  for (const line of lines) {
    const [at = '', file = ''] = line.split('\t');
    if (!file) continue;
    const ms = Number(at);
    if (file !== current) {
      if (current) previous = spans.get(current)?.to ?? previous;
      current = file;
      if (!spans.has(file)) spans.set(file, { from: previous, to: ms });
    }
    const span = spans.get(file);
    if (span) span.to = ms;
  }
  return [...spans].map(([file, { from, to }]) => ({ file, ms: to - from })).sort((a, b) => b.ms - a.ms);
}

function printSlowest(runStartedAt: number): void {
  if (!existsSync(TIMINGS_FILE)) return;
  const rows = fileTimes(readFileSync(TIMINGS_FILE, 'utf8').split('\n'), runStartedAt);
  rmSync(TIMINGS_FILE, { force: true });
  if (rows.length < 2) return;
  const total = rows.reduce((sum, r) => sum + r.ms, 0);
  console.log(`\nslowest test files (of ${rows.length}, ${(total / 60_000).toFixed(1)} min in all):`);
  for (const { ms, file } of rows.slice(0, SLOWEST))
    console.log(`  ${(ms / 1000).toFixed(1).padStart(6)} s  ${path.relative(ROOT, file)}`);
}

async function main(args: string[]): Promise<number> {
  const chaos = args.includes('--chaos');
  const files = chaos
    ? testsIn('test/chaos')
    : args.length > 0
      ? args
      : [...testsIn('test/unit'), ...testsIn('test/integration')];
  const wholeRun = chaos || args.length === 0;
  if (!wholeRun) {
    const startedAt = Date.now();
    return runNodeTest(files).finally(() => printSlowest(startedAt));
  }

  const missing = missingPrerequisites();
  if (missing.length > 0) {
    for (const line of describeMissing(missing)) console.error(line);
    return 1;
  }
  const log = (line: string) => console.log(line);
  let prepared: Prepared = { started: [] };
  let testsStartedAt: number | undefined;
  // A Ctrl-C during the set-up still stops what it started (the handlers of runNodeTest take over later).
  const interrupted = () => undefined;
  process.on('SIGINT', interrupted);
  try {
    prepared = await prepareTestMachine(log);
    process.off('SIGINT', interrupted);
    testsStartedAt = Date.now();
    return await runNodeTest(files);
  } finally {
    if (testsStartedAt) printSlowest(testsStartedAt);
    await finishTestRun(prepared, log);
  }
}

if (require.main === module)
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(`npm test: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
