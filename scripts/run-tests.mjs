#!/usr/bin/env node
// Runs the test files with Node's built-in runner (through tsx), so the runner's summary ends the output.
//   node scripts/run-tests.mjs            unit + integration tests (what `npm test` runs)
//   node scripts/run-tests.mjs --chaos    the fault-injection suite (`npm run chaos`)
//   node scripts/run-tests.mjs FILE...    just those files
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);

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

const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=1', ...files],
  { cwd: root, stdio: 'inherit' },
);
process.exit(result.status ?? 1);
