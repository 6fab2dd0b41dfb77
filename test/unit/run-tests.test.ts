// scripts/run-tests.mjs never lets a test file hang the run (a CI job must fail, not stall until its
// limit): a file that leaves a handle open after its tests ends anyway, and a test that never finishes
// fails on the runner's timeout. Each case runs the runner on a fixture under test/fixtures/runner/
// (outside the default test list) and kills it if it outlives the deadline.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

const ROOT = path.resolve(__dirname, '../..');
const DEADLINE_MS = 60_000;

interface Run {
  code: number | null;
  output: string;
  /** The runner outlived DEADLINE_MS and was killed. */
  hung: boolean;
  ms: number;
}

function runTests(file: string, env: Record<string, string> = {}): Promise<Run> {
  const started = Date.now();
  // Without the runner's marker of a test child process, or the nested runner would skip its files.
  const { NODE_TEST_CONTEXT: _context, ...parentEnv } = process.env;
  const child = spawn(process.execPath, [path.join(ROOT, 'scripts', 'run-tests.mjs'), file], {
    cwd: ROOT,
    env: { ...parentEnv, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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
