// One node --test process for a batch of short test files (scripts/test-lanes.ts), which it loads one
// after another. Node 20's runner gives every file a process of its own, and loading tsx, the SDK and the
// project costs most of a second of CPU per process, more than most unit files take: on the two cores
// that was half a minute of every whole run. Each file is loaded inside a describe() named by its path,
// so its top-level tests and hooks stay its own and a failure names it; it is timed as
// scripts/test-timings.mjs times a file of its own process. scripts/run-tests.ts names the files in
// DOCS_ADMIN_TEST_BATCH, one per line.
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe } from 'node:test';
import { BATCH_ENV } from './test-lanes';

const files = (process.env[BATCH_ENV] ?? '').split('\n').filter(Boolean);
// A batch that names no file would pass having run nothing.
if (files.length === 0) throw new Error(`scripts/test-batch.ts: ${BATCH_ENV} names no test file`);
// Not passed on to what the tests start (a test of the runner runs batches of its own).
delete process.env[BATCH_ENV];
const timings = process.env.DOCS_ADMIN_TEST_TIMINGS;
const note = (what: 'start' | 'end', file: string) => {
  if (timings) appendFileSync(timings, `${what}\t${Date.now()}\t${file}\n`);
};

for (const file of files) {
  describe(file, () => {
    before(() => {
      note('start', file);
      // What a test file's own process would have: assertClusterLane reads its lane marker from here.
      process.argv[1] = path.resolve(file);
    });
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    require(path.resolve(file));
    after(() => note('end', file));
  });
}
