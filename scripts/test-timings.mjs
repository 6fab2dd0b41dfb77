// Loaded with --import into every test file's process by scripts/run-tests.ts: appends
// `start\t<epoch ms>\t<file>` at once and `end\t<epoch ms>\t<file>` at exit to the file named by
// DOCS_ADMIN_TEST_TIMINGS, synchronously (--test-force-exit ends the process without flushing). Files
// run side by side, so each file is timed in its own process; a reporter in the parent sees their
// events late and out of order. A file killed on its timeout leaves no end line (see fileTimes).
import { appendFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

const out = process.env.DOCS_ADMIN_TEST_TIMINGS;
const file = process.argv[1];
// Worker threads (the SDK's workflow threads) load it too, with their own script as argv[1]. A batch's
// process (scripts/test-batch.ts) times each of its files itself.
if (out && file && isMainThread && !process.env.DOCS_ADMIN_TEST_BATCH) {
  const note = (what) => appendFileSync(out, `${what}\t${Date.now()}\t${file}\n`);
  note('start');
  process.once('exit', () => note('end'));
}
