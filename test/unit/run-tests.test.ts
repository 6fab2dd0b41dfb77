// test-lane: parallel
// scripts/run-tests.ts never lets a test file hang the run (a CI job must fail, not stall until its
// limit): a file that leaves a handle open after its tests ends anyway, and a test that never finishes
// fails on the runner's timeout. A run interrupted by Ctrl-C or SIGTERM still stops what it started.
// Each case runs the runner on a fixture under test/fixtures/runner/ (outside the default test list) and
// kills it if it outlives the deadline.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { waitFor } from '../../scripts/wait';
import {
  assertClusterLane,
  fileTimes,
  guessMs,
  type Job,
  laneOf,
  nextJob,
  plannedWallMs,
  planJobs,
} from '../../scripts/test-lanes';

const ROOT = path.resolve(__dirname, '../..');
const DEADLINE_MS = 60_000;

interface Run {
  code: number | null;
  output: string;
  /** The runner outlived DEADLINE_MS and was killed. */
  hung: boolean;
  ms: number;
}

function runTests(file: string | string[], env: Record<string, string> = {}): Promise<Run> {
  const started = Date.now();
  // Without the runner's marker of a test child process, or the nested runner would skip its files.
  const { NODE_TEST_CONTEXT: _context, ...parentEnv } = process.env;
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'scripts', 'run-tests.ts'), ...[file].flat()],
    {
      cwd: ROOT,
      detached: true, // a process group of its own: a hung run is killed with its node --test processes
      env: { ...parentEnv, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  let hung = false;
  const timer = setTimeout(() => {
    hung = true;
    process.kill(-child.pid!, 'SIGKILL');
  }, DEADLINE_MS);
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output, hung, ms: Date.now() - started });
    }),
  );
}

test(
  'a file that leaves a handle open after its tests passed ends the run, successfully',
  { timeout: DEADLINE_MS + 10_000 },
  async () => {
    const run = await runTests('test/fixtures/runner/open-handle.test.ts');
    assert.equal(run.hung, false, `the runner hung:\n${run.output}`);
    assert.equal(run.code, 0, run.output);
    assert.match(run.output, /pass 1/);
  },
);

test(
  'a test that never finishes fails on the runner timeout instead of hanging',
  { timeout: DEADLINE_MS + 10_000 },
  async () => {
    const run = await runTests('test/fixtures/runner/never-ends.test.ts', { TEST_TIMEOUT_MS: '3000' });
    assert.equal(run.hung, false, `the runner hung:\n${run.output}`);
    assert.notEqual(run.code, 0, 'the run fails');
    assert.match(run.output, /timed out after 3000ms/);
  },
);

test(
  'a file stuck outside any test (a describe that never settles) fails on its deadline, on Node 20 and 24 alike',
  { timeout: DEADLINE_MS + 10_000 },
  async () => {
    // Node 20's --test-timeout bounds the file; Node 24's only its tests, so the file's own deadline must.
    const run = await runTests('test/fixtures/runner/stuck-describe.test.ts', { TEST_TIMEOUT_MS: '3000' });
    assert.equal(run.hung, false, `the runner hung:\n${run.output}`);
    assert.notEqual(run.code, 0, 'the run fails');
    assert.match(run.output, /timed out after 3000ms|still running after 8000 ms, the deadline of a test file/);
  },
);

test(
  'parallel files run side by side, and the run ends with the slowest files, each timed by its own process',
  { timeout: DEADLINE_MS + 10_000 },
  async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'run-tests-lanes-'));
    const files = ['side-by-side-a', 'side-by-side-b', 'open-handle'].map((f) => `test/fixtures/runner/${f}.test.ts`);
    const run = await runTests(files, { SIDE_BY_SIDE_LOG: path.join(dir, 'log') }).finally(() =>
      rmSync(dir, { recursive: true, force: true }),
    );
    assert.equal(run.hung, false, `the runner hung:\n${run.output}`);
    // The side-by-side files pass only when they run at the same time; open-handle runs alone after.
    assert.equal(run.code, 0, run.output);
    assert.match(
      run.output,
      /parallel: test\/fixtures\/runner\/side-by-side-[ab][^]*alone: test\/fixtures\/runner\/open-handle/,
    );
    const at = run.output.indexOf('slowest test files (of 3,');
    assert.ok(at >= 0, `no listing of the slowest files:\n${run.output}`);
    const rows = [...run.output.slice(at).matchAll(/^ +(\d+\.\d) s {2}(\S+)$/gm)].map((m) => ({
      s: Number(m[1]),
      file: m[2]!,
    }));
    assert.deepEqual(rows.map((r) => r.file).sort(), [...files].sort());
    assert.deepEqual(
      rows,
      [...rows].sort((x, y) => y.s - x.s),
      'slowest first',
    );
    for (const row of rows.filter((r) => r.file.includes('side-by-side')))
      assert.ok(row.s >= 2, `${row.file}: ${row.s} s, it ran at least 2 s`);
  },
);

test('a batch of short files runs in one process, each file its own suite, timed and named when it fails', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'run-tests-batch-'));
  const files = ['batch-pass', 'batch-fail'].map((f) => `test/fixtures/runner/${f}.test.ts`);
  const log = path.join(dir, 'log');
  const timings = path.join(dir, 'timings');
  const { NODE_TEST_CONTEXT: _context, ...parentEnv } = process.env;
  const run = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-reporter=spec', path.join(ROOT, 'scripts', 'test-batch.ts')],
    {
      cwd: ROOT,
      env: { ...parentEnv, DOCS_ADMIN_TEST_BATCH: files.join('\n'), DOCS_ADMIN_TEST_TIMINGS: timings, BATCH_LOG: log },
      encoding: 'utf8',
      timeout: DEADLINE_MS,
    },
  );
  const logged = existsSync(log) ? readFileSync(log, 'utf8') : '';
  const timed = existsSync(timings) ? fileTimes(readFileSync(timings, 'utf8').split('\n'), Date.now()) : [];
  rmSync(dir, { recursive: true, force: true });
  const output = `${run.stdout}${run.stderr}`;
  assert.equal(run.status, 1, `one file fails, so the batch does:\n${output}`);
  assert.match(output, /✖ test\/fixtures\/runner\/batch-fail\.test\.ts/);
  assert.match(output, /✔ test\/fixtures\/runner\/batch-pass\.test\.ts/);
  assert.match(output, /batch-fail fails on purpose/);
  const pids = [...logged.matchAll(/^(pass|fail) (\d+)$/gm)].map((m) => m[2]);
  assert.equal(pids.length, 2, `both files ran their tests:\n${logged}`);
  assert.equal(new Set(pids).size, 1, 'in one process');
  assert.deepEqual(timed.map((t) => t.file).sort(), [...files].sort(), 'each file timed, and only they');

  const none = spawnSync(process.execPath, ['--import', 'tsx', '--test', path.join(ROOT, 'scripts', 'test-batch.ts')], {
    cwd: ROOT,
    env: { ...parentEnv, DOCS_ADMIN_TEST_BATCH: '' },
    encoding: 'utf8',
    timeout: DEADLINE_MS,
  });
  assert.notEqual(none.status, 0, 'a batch that names no file fails');
  assert.match(`${none.stdout}${none.stderr}`, /names no test file/);
});

test('file times: each file from its process start to its exit, side by side; a killed file to its lane end', () => {
  const lines = [
    'start\t1000\ta.test.ts',
    'start\t1200\tb.test.ts',
    'end\t4000\ta.test.ts',
    'start\t4100\tc.test.ts',
    'end\t6200\tb.test.ts',
    'start\t7000\tkilled.test.ts',
    '',
  ];
  assert.deepEqual(fileTimes(lines, 9000), [
    { file: 'b.test.ts', ms: 5000 },
    { file: 'c.test.ts', ms: 4900 },
    { file: 'a.test.ts', ms: 3000 },
    { file: 'killed.test.ts', ms: 2000 },
  ]);
});

test('lanes: the first line names the lane; an unmarked or misspelt file runs alone', () => {
  assert.equal(laneOf('// test-lane: parallel'), 'parallel');
  assert.equal(laneOf('// test-lane: cluster'), 'cluster');
  assert.equal(laneOf('// test-lane: cluster-alone (restarts the cluster)'), 'cluster-alone');
  assert.equal(laneOf('// test-lane: alone (holds port 9090)'), 'alone');
  assert.equal(laneOf('// A new file without the marker'), 'alone');
  assert.equal(laneOf('// test-lane: parallelish'), 'alone');
  assert.equal(laneOf('// test-lane: clustered'), 'alone');
});

const FIRST_LINES: Record<string, string> = {
  'fleets.test.ts': '// test-lane: cluster',
  'e2e.test.ts': '// test-lane: cluster',
  'worker.test.ts': '// test-lane: parallel',
  'cli.test.ts': '// test-lane: parallel',
  'unit-a.test.ts': '// test-lane: parallel',
  'unit-b.test.ts': '// test-lane: parallel',
  'unit-c.test.ts': '// test-lane: parallel',
  'new.test.ts': '// test-lane: parallel',
  'chaos.test.ts': '// test-lane: cluster-alone (restarts the server)',
  'tls.test.ts': '// test-lane: cluster-alone (switches to TLS)',
  'timing.test.ts': '// test-lane: alone (measures latency)',
  'unmarked.test.ts': "import { test } from 'node:test';",
};
const PREVIOUS = new Map(
  Object.entries({
    'fleets.test.ts': 150,
    'e2e.test.ts': 70,
    'worker.test.ts': 130,
    'cli.test.ts': 80,
    'unit-a.test.ts': 5,
    'unit-b.test.ts': 9,
    'unit-c.test.ts': 25,
    'chaos.test.ts': 110,
    'tls.test.ts': 60,
    'timing.test.ts': 30,
    'unmarked.test.ts': 1,
  }).map(([file, s]) => [file, s * 1000]),
);
const readFirstLine = (file: string) => FIRST_LINES[file]!;
const job = (lane: Job['lane'], files: string[], s: number): Job => ({ lane, files, ms: s * 1000 });

test('jobs: a process per file, longest first; short parallel files share one; a file never timed is guessed', () => {
  const typical = new Map([['new.test.ts', 40_000]]);
  assert.deepEqual(planJobs(Object.keys(FIRST_LINES), PREVIOUS, readFirstLine, typical), [
    job('cluster', ['fleets.test.ts'], 150),
    job('parallel', ['worker.test.ts'], 130),
    job('cluster-alone', ['chaos.test.ts'], 110),
    job('parallel', ['cli.test.ts'], 80),
    job('cluster', ['e2e.test.ts'], 70),
    job('cluster-alone', ['tls.test.ts'], 60),
    job('parallel', ['new.test.ts'], 40),
    job('alone', ['timing.test.ts'], 30),
    job('parallel', ['unit-c.test.ts'], 25),
    job('parallel', ['unit-b.test.ts', 'unit-a.test.ts'], 14),
    job('alone', ['unmarked.test.ts'], 1),
  ]);
  assert.deepEqual(
    [guessMs('test/unit/x.test.ts'), guessMs('test/integration/x.test.ts'), guessMs('test/chaos/x.test.ts')],
    [5_000, 30_000, 120_000],
  );
});

test('schedule: cluster files first; then the cluster-alone files one by one, parallel files beside; alone files last', () => {
  const jobs = planJobs(Object.keys(FIRST_LINES), PREVIOUS, readFirstLine, new Map([['new.test.ts', 40_000]]));
  const named = (file: string) => jobs.find((j) => j.files.includes(file))!;
  const without = (...files: string[]) => jobs.filter((j) => !files.some((f) => j.files.includes(f)));
  // The cluster files first, longest first; parallel files only in the slots no cluster file waits for.
  assert.equal(nextJob(jobs, [], 3), named('fleets.test.ts'));
  assert.equal(
    nextJob(without('fleets.test.ts', 'worker.test.ts'), [named('fleets.test.ts'), named('worker.test.ts')], 3),
    named('e2e.test.ts'),
  );
  assert.equal(
    nextJob(without('fleets.test.ts', 'e2e.test.ts'), [named('fleets.test.ts'), named('e2e.test.ts')], 3),
    named('worker.test.ts'),
  );
  // No cluster-alone file beside a cluster file, nor before every cluster file has run.
  const chainAndAlone = without(
    'fleets.test.ts',
    'e2e.test.ts',
    'worker.test.ts',
    'cli.test.ts',
    'new.test.ts',
    'unit-c.test.ts',
    'unit-b.test.ts',
  );
  assert.equal(nextJob(chainAndAlone, [named('fleets.test.ts')], 3), undefined);
  assert.equal(nextJob([...chainAndAlone, named('e2e.test.ts')], [], 3), named('e2e.test.ts'));
  // Then the chain, before parallel files, one file at a time, parallel files beside it.
  const afterCluster = without('fleets.test.ts', 'e2e.test.ts');
  assert.equal(nextJob(afterCluster, [named('worker.test.ts')], 3), named('chaos.test.ts'));
  assert.equal(
    nextJob(without('fleets.test.ts', 'e2e.test.ts', 'chaos.test.ts'), [named('chaos.test.ts')], 3),
    named('worker.test.ts'),
  );
  // Beside a cluster-alone file (it mostly waits on the cluster it changes), one parallel file more.
  const beside = without('fleets.test.ts', 'e2e.test.ts', 'chaos.test.ts', 'worker.test.ts', 'cli.test.ts');
  const chainAndTwo = [named('chaos.test.ts'), named('worker.test.ts'), named('cli.test.ts')];
  assert.equal(nextJob(beside, chainAndTwo, 3), named('new.test.ts'));
  assert.equal(nextJob(beside, [...chainAndTwo, named('new.test.ts')], 3), undefined, 'every slot taken');
  assert.equal(
    nextJob(beside, [named('unit-c.test.ts'), named('worker.test.ts'), named('cli.test.ts')], 3),
    undefined,
    'three parallel files: every slot taken',
  );
  // Alone files only when nothing else is left or running, and nothing beside them.
  const alone = [named('timing.test.ts'), named('unmarked.test.ts')];
  assert.equal(nextJob([...alone, named('unit-c.test.ts')], [], 3), named('unit-c.test.ts'));
  assert.equal(nextJob(alone, [named('unit-c.test.ts')], 3), undefined);
  assert.equal(nextJob(alone, [], 3), named('timing.test.ts'));
  assert.equal(nextJob([named('unit-c.test.ts')], [named('timing.test.ts')], 3), undefined);
});

test('cluster files, which mostly wait on the server, run two more at once than the other lanes; one slot stays one', () => {
  const cluster = [1, 2, 3, 4, 5, 6].map((n) => job('cluster', [`c${n}.test.ts`], 100 - n));
  const parallel = job('parallel', ['p.test.ts'], 200);
  const chain = job('cluster-alone', ['tls.test.ts'], 50);
  assert.equal(nextJob([...cluster.slice(3), parallel], cluster.slice(0, 3), 3), cluster[3]);
  assert.equal(nextJob([...cluster.slice(5), parallel], cluster.slice(0, 5), 3), undefined, 'five at most');
  // Past the cluster files the other lanes keep their three: a parallel file waits for a slot under three.
  assert.equal(nextJob([parallel, chain], cluster.slice(0, 3), 3), undefined);
  assert.equal(nextJob([parallel, chain], cluster.slice(0, 2), 3), parallel);
  assert.equal(nextJob(cluster.slice(1), cluster.slice(0, 1), 1), undefined, 'TEST_CONCURRENCY=1: one at a time');
  assert.equal(
    plannedWallMs([...cluster, parallel], 1),
    [...cluster, parallel].reduce((sum, j) => sum + j.ms, 0),
  );
});

test('planned wall time: the schedule of nextJob with each job its time', () => {
  const jobs = planJobs(Object.keys(FIRST_LINES), PREVIOUS, readFirstLine, new Map([['new.test.ts', 40_000]]));
  // fleets 0-150 and e2e 0-70 first, worker 0-130 beside them, then cli 70-150 and new 130-170; the chain
  // once fleets ended: chaos 150-260, tls 260-320, with unit-c 150-175 and unit-a+b 170-184 beside it;
  // the alone files 320-351.
  assert.equal(plannedWallMs(jobs, 3), 351_000);
  // One slot: every job one after another.
  assert.equal(
    plannedWallMs(jobs, 1),
    jobs.reduce((sum, j) => sum + j.ms, 0),
  );
  assert.equal(plannedWallMs([], 3), 0);
});

test('a file marked parallel that reaches for the shared cluster fails, saying which marker it needs', () => {
  const lines: Record<string, string> = {
    '/repo/test/a.test.ts': '// test-lane: parallel',
    '/repo/test/b.test.ts': '// test-lane: cluster',
  };
  const read = (file: string) => lines[file]!;
  assert.throws(() => assertClusterLane('/repo/test/a.test.ts', read), /mark it "\/\/ test-lane: cluster"/);
  assert.doesNotThrow(() => assertClusterLane('/repo/test/b.test.ts', read));
  assert.doesNotThrow(() => assertClusterLane('/repo/scripts/chaos.ts', read), 'not a test file: a script');
});

/** What `npm test` runs: its script in package.json. */
function npmTestRunner(): string {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { test: string } };
  return pkg.scripts.test;
}

/**
 * `npm test`'s runner as npm runs it (`npm exec -c`: the same shell and signal relay as `npm test`), its
 * set-up and checks replaced by test/fixtures/runner/fake-setup.ts, on a file that waits; once that file
 * runs, `interrupt` is sent (if given). Resolves with how npm ended and what the fake set-up noted.
 */
async function fakeRun({ interrupt, env }: { interrupt?: (npm: ReturnType<typeof spawn>) => void; env?: object }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'run-tests-signal-'));
  const log = path.join(dir, 'setup.log');
  const noted = () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : []);
  const { NODE_TEST_CONTEXT: _context, ...parentEnv } = process.env;
  const npm = spawn('npm', ['exec', '--no', '-c', `${npmTestRunner()} test/fixtures/runner/waits.test.ts`], {
    cwd: ROOT,
    detached: true, // a process group of its own, as a terminal gives a command
    env: { ...parentEnv, ...env, DOCS_ADMIN_TEST_SETUP: 'test/fixtures/runner/fake-setup.ts', FAKE_SETUP_LOG: log },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    npm.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const groupAlive = () => {
    try {
      return process.kill(-npm.pid!, 0);
    } catch {
      return false;
    }
  };
  try {
    if (interrupt) {
      await waitFor(() => noted().includes('test running'), { timeoutMs: 60_000, what: 'the test file to run' });
      interrupt(npm);
    }
    const exit = await ended;
    await waitFor(() => !groupAlive(), { timeoutMs: 30_000, what: 'every process of the run to end' });
    return { exit, noted: noted() };
  } finally {
    if (groupAlive()) process.kill(-npm.pid!, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

test(
  'Ctrl-C (SIGINT to the process group, its output piped to a reader that dies too) stops what the run started',
  { timeout: DEADLINE_MS + 30_000 },
  async () => {
    const run = await fakeRun({
      interrupt: (npm) => {
        process.kill(-npm.pid!, 'SIGINT');
        npm.stdout?.destroy(); // the `| tail` of the terminal got the Ctrl-C too: writes now fail with EPIPE
        npm.stderr?.destroy();
      },
    });
    assert.deepEqual(run.noted, ['started', 'test running', 'stopped postgresql']);
    assert.ok(run.exit.signal === 'SIGINT' || (run.exit.code ?? 0) !== 0, `npm ended ${JSON.stringify(run.exit)}`);
  },
);

test('SIGTERM to npm stops the tests and what the run started', { timeout: DEADLINE_MS + 30_000 }, async () => {
  const run = await fakeRun({ interrupt: (npm) => npm.kill('SIGTERM') });
  assert.deepEqual(run.noted, ['started', 'test running', 'stopped postgresql']);
  assert.ok(run.exit.signal === 'SIGTERM' || (run.exit.code ?? 0) !== 0, `npm ended ${JSON.stringify(run.exit)}`);
});

test('a check that fails (beside the set-up) runs no test, and what the set-up started is stopped', async () => {
  const run = await fakeRun({ env: { FAKE_CHECKS: 'fail' } });
  assert.deepEqual(run.noted, ['started', 'checks failed', 'stopped postgresql']);
  assert.equal(run.exit.code, 1);
});
