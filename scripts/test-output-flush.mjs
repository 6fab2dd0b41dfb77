// Loaded with --import into every node --test process by scripts/run-tests.ts: makes stdout blocking when
// it is a pipe. A test file's process reports its results to its node --test parent over a pipe, and
// --test-force-exit ends it with process.exit(), which drops what a non-blocking pipe still holds: the
// last results never reach the report, and the run prints fewer tests than ran (seen here in a whole run
// under load: a batch's last two files; nodejs/node#64833, open). Blocking writes are done before exit.
import { isMainThread } from 'node:worker_threads';

if (isMainThread) process.stdout._handle?.setBlocking?.(true);
