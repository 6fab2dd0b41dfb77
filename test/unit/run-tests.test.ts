// scripts/run-tests.ts never lets a test file hang the run (a CI job must fail, not stall until its
// limit): a file that leaves a handle open after its tests ends anyway, and a test that never finishes
// fails on the runner's timeout. Each case runs the runner on a fixture under test/fixtures/runner/
// (outside the default test list) and kills it if it outlives the deadline.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { fileTimes } from '../../scripts/run-tests';

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
    child.kill('SIGKILL');
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
  'a run of several files ends with the slowest files and their times',
  { timeout: DEADLINE_MS + 10_000 },
  async () => {
    const run = await runTests(
      ['test/fixtures/runner/open-handle.test.ts', 'test/fixtures/runner/never-ends.test.ts'],
      { TEST_TIMEOUT_MS: '8000' },
    );
    assert.equal(run.hung, false, `the runner hung:\n${run.output}`);
    const at = run.output.indexOf('slowest test files (of 2,');
    assert.ok(at >= 0, `no listing of the slowest files:\n${run.output}`);
    const rows = [...run.output.slice(at).matchAll(/^ +(\d+\.\d) s {2}(\S+)$/gm)].map((m) => ({
      s: Number(m[1]),
      file: m[2],
    }));
    // never-ends runs until its 8 s timeout: listed first, with at least those 8 s.
    assert.deepEqual(
      rows.map((r) => r.file),
      ['test/fixtures/runner/never-ends.test.ts', 'test/fixtures/runner/open-handle.test.ts'],
    );
    assert.ok((rows[0]?.s ?? 0) >= 8, run.output.slice(at));
  },
);

test("file times: from the previous file's last test to its own last one, slowest first", () => {
  const lines = ['1500\ta.test.ts', '4000\ta.test.ts', '4500\tb.test.ts', '9000\tb.test.ts', '9100\tc.test.ts', ''];
  assert.deepEqual(fileTimes(lines, 1000), [
    { file: 'b.test.ts', ms: 5000 },
    { file: 'a.test.ts', ms: 3000 },
    { file: 'c.test.ts', ms: 100 },
  ]);
});
