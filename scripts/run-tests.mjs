#!/usr/bin/env node
// Runs the test files with Node's built-in runner (through tsx), so the runner's summary ends the output.
//   node scripts/run-tests.mjs            unit + integration tests (what `npm test` runs)
//   node scripts/run-tests.mjs --chaos    the fault-injection suite (`npm run chaos`)
//   node scripts/run-tests.mjs FILE...    just those files
// A file never hangs the run: --test-force-exit ends each file's process once its tests are done (a
// worker or timer left open would otherwise keep it alive after its tests failed), and --test-timeout
// fails a test that does not finish. On Node 20 that timeout also bounds each file as a whole, so it
// is far above the slowest file (TEST_TIMEOUT_MS overrides it, e.g. to prove the guard).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
/** 20 minutes: the slowest file (a full-size chaos file on the cluster) takes well under 10. */
const DEFAULT_TIMEOUT_MS = 20 * 60 * 1000;

function testsIn(dir) {
  const full = path.join(root, dir);
  if (!existsSync(full)) return [];
  return readdirSync(full)
    .filter((name) => name.endsWith('.test.ts'))
    .sort()
    .map((name) => path.join(dir, name));
}

let files;
if (args.includes('--chaos')) files = testsIn('test/chaos');
else if (args.length > 0) files = args;
else files = [...testsIn('test/unit'), ...testsIn('test/integration')];

const timeoutMs = Number(process.env.TEST_TIMEOUT_MS) || DEFAULT_TIMEOUT_MS;
const result = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-reporter=spec',
    '--test-concurrency=1',
    '--test-force-exit',
    `--test-timeout=${timeoutMs}`,
    ...files,
  ],
  { cwd: root, stdio: 'inherit' },
);
process.exit(result.status ?? 1);
