// A node:test reporter for scripts/run-tests.ts: appends `<epoch ms>\t<file>` for every finished test to
// the file named by DOCS_ADMIN_TEST_TIMINGS, at once and synchronously (--test-force-exit ends the
// process before a reporter's last output would be flushed). The runner turns these into file times.
import { appendFileSync } from 'node:fs';

export default async function* fileTimings(source) {
  const out = process.env.DOCS_ADMIN_TEST_TIMINGS;
  for await (const event of source) {
    const file = event.data?.file;
    if (out && file && (event.type === 'test:pass' || event.type === 'test:fail'))
      appendFileSync(out, `${Date.now()}\t${file}\n`);
  }
  yield '';
}
