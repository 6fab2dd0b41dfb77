// Node's spec reporter without its closing summary (`tests 12`, `pass 12`, ...), which it writes as JSON
// to the file DOCS_ADMIN_TEST_SUMMARY names: scripts/run-tests.ts runs several node --test processes,
// some side by side, and prints one summary of them all at the end instead of one per process in the
// middle of another's output. Failing tests are still listed at the end of each process's output.
import { writeFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { spec } from 'node:test/reporters';

const SUMMARY_LINE = /^(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) ([\d.]+)$/;

export default async function* specWithoutSummary(source) {
  const out = process.env.DOCS_ADMIN_TEST_SUMMARY;
  const summary = {};
  async function* events() {
    for await (const event of source) {
      // The run's own summary: diagnostics of no file at the top level.
      const line =
        event.type === 'test:diagnostic' && event.data.nesting === 0 && event.data.file === undefined
          ? SUMMARY_LINE.exec(event.data.message)
          : null;
      if (!line) yield event;
      // Written at once: --test-force-exit may end the process before this reporter ends.
      else if (out) writeFileSync(out, JSON.stringify(Object.assign(summary, { [line[1]]: Number(line[2]) })));
    }
  }
  yield* Readable.from(events()).pipe(new spec());
}
