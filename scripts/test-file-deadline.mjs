// Loaded with --import into every test file's process by scripts/run-tests.ts: ends the process, failing
// the file, once it has run DOCS_ADMIN_TEST_FILE_DEADLINE_MS. Node 20's --test-timeout bounds each file
// as a whole; from Node 22 on it bounds only each test and hook, so on Node 24 a file stuck outside them
// (a describe() callback that never settles) would hold the run until CI's own limit. The deadline
// comes after the --test-timeout a stuck test meets first, so that test is still the one named.
import { isMainThread } from 'node:worker_threads';

const deadlineMs = Number(process.env.DOCS_ADMIN_TEST_FILE_DEADLINE_MS);
const file = process.argv[1];
// Worker threads (the SDK's workflow threads) load it too, with their own script as argv[1].
if (deadlineMs > 0 && file && isMainThread) {
  setTimeout(() => {
    process.stderr.write(`${file}: still running after ${deadlineMs} ms, the deadline of a test file: ended\n`);
    process.exit(1);
  }, deadlineMs).unref(); // never what keeps a finished file alive
}
