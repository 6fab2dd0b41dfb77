// test-lane: parallel
// `npm run bench`, reduced to fit in `npm test`: the end-to-end throughput benchmark with 60 lifecycles
// and the rate-limit drain with a small burst. Asserts what must hold at any size (every lifecycle
// completes, the figures are measured and rendered); wall-clock figures are printed, never asserted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runRateLimitDrain } from '../../bench/rate-limit-drain';
import {
  drainTargets,
  renderDrainMarkdown,
  renderDrainSvg,
  renderThroughputMarkdown,
  renderThroughputSvg,
} from '../../bench/run';
import { runThroughputBenchmark } from '../../bench/throughput';

test(
  'throughput benchmark, 60 lifecycles: all complete, figures measured and rendered',
  { timeout: 240_000 },
  async () => {
    const report = await runThroughputBenchmark({
      size: 60,
      longFactor: 3,
      longSize: 10,
      historySample: 5,
      log: () => undefined,
    });
    console.log(renderThroughputMarkdown(report));
    assert.equal(report.baseline.completed, 60);
    assert.equal(report.docsAdmin.completed, 60);
    assert.equal(report.docsAdmin.failed, 0);
    assert.equal(report.long.completed, 10);
    assert.ok(report.baseline.completedPerSecond > 0 && report.docsAdmin.completedPerSecond > 0);
    assert.ok(report.docsAdmin.worker.peakRssMiB > 50, 'the worker process RSS was sampled');
    assert.ok(report.docsAdmin.worker.cpuSeconds > 0, 'the worker process CPU was sampled');
    for (const run of [report.baseline, report.docsAdmin]) {
      assert.ok((run.otherCpu.serverSeconds ?? 0) > 0, 'the dev server started here was sampled');
      assert.ok(run.otherCpu.benchProcessSeconds > 0, "this process's CPU was counted");
    }
    // One start, at least one status poll, one bundle per export; one create and at least one poll per agent job.
    assert.ok(
      report.docsAdmin.apiCallsPerJob.export >= 3,
      `export calls/job ${report.docsAdmin.apiCallsPerJob.export}`,
    );
    assert.ok(report.docsAdmin.apiCallsPerJob.agent >= 2, `agent calls/job ${report.docsAdmin.apiCallsPerJob.agent}`);
    assert.ok(report.docsAdmin.historyEvents.export > 10 && report.docsAdmin.historyEvents.agent > 10);
    assert.equal(report.targets.find((t) => t.name === 'lifecycles lost or failed')?.pass, true);
    const svg = renderThroughputSvg(report);
    assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    assert.equal((svg.match(/<path /g) ?? []).length, 4, 'two completion lines and two RSS lines');
  },
);

test('rate-limit drain, small burst: every job completes', { timeout: 240_000 }, async () => {
  const figures = await runRateLimitDrain({ jobs: 24, otherJobs: 3, limit: 10, windowMs: 2_000, log: () => undefined });
  const markdown = renderDrainMarkdown([figures]);
  console.log(markdown);
  assert.equal(figures.completed, 27);
  assert.equal(figures.failed, 0);
  // 24 jobs at 10 per 2 s need two full windows after the first: never faster than the limit allows.
  assert.ok(figures.lastCreateMs >= 2 * 2_000, `last create at ${figures.lastCreateMs} ms`);
  assert.equal(drainTargets(figures).find((t) => t.name.startsWith('lifecycles lost'))?.pass, true);
  assert.match(markdown, /\| 2\.0 \| 24 \+ 3 \| 27 \|/);
  assert.deepEqual([figures.burst.createMs.length, figures.burst.completionMs.length], [24, 24]);
  assert.equal(
    (renderDrainSvg([figures]).match(/<path /g) ?? []).length,
    4,
    'allowance, creates, completions, other project',
  );
});
