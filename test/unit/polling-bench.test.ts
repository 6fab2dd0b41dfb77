// test-lane: parallel
// The polling-efficiency targets, on a short deterministic run of the simulation (counts and simulated
// lags, not wall-clock timings).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runPollingBenchmark } from '../../bench/polling-sim';

test('polling policies meet the efficiency targets (200 jobs per scenario, fixed seed)', () => {
  const report = runPollingBenchmark({ jobs: 200, seed: 7 });
  assert.deepEqual(
    report.scenarios.map((s) => s.name),
    ['mixed shapes', 'steady linear', 'finishing at 100 %', 'agent jobs'],
  );
  for (const scenario of report.scenarios) {
    assert.equal(scenario.policies.length, 5, 'four baselines and ours');
    // Every shape family has its queued phases: about 30 % of the jobs, queued 1 s..3 min.
    const { count, queued, queuedMinMs, queuedMaxMs } = scenario.jobs;
    assert.equal(count, 200);
    assert.ok(queued >= 0.2 * count && queued <= 0.4 * count, `${scenario.name}: ${queued} queued`);
    assert.ok(
      queuedMinMs >= 1_000 && queuedMaxMs <= 180_000,
      `${scenario.name}: queued ${queuedMinMs}..${queuedMaxMs} ms`,
    );
    // The export families have runs of 1-3 h, reported on their own (a sixth of log-uniform 15 s..3 h).
    if (scenario.name !== 'agent jobs') {
      assert.ok(scenario.jobs.long >= 0.1 * count, `${scenario.name}: ${scenario.jobs.long} runs of 1 h or more`);
      for (const p of scenario.policies) assert.ok(p.longLagP99Ms! >= p.longLagP50Ms!, `${scenario.name}: ${p.name}`);
    }
    for (const t of scenario.targets) {
      assert.ok(t.pass, `${scenario.name}: ${t.description} = ${t.value.toFixed(2)} > ${t.limit}`);
    }
  }
  assert.equal(report.pass, true);
  // Plain JSON: survives a round trip unchanged.
  assert.deepEqual(JSON.parse(JSON.stringify(report)), report);
});

test('the simulation is deterministic for a seed', () => {
  assert.deepEqual(runPollingBenchmark({ jobs: 30, seed: 3 }), runPollingBenchmark({ jobs: 30, seed: 3 }));
});
