import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  availablePermits,
  defaultMarginMs,
  nextFreeAt,
  planGrants,
  pruneGrants,
  slotFreeAt,
  theoreticalDrainMs,
  type WindowLimit,
} from '../../src/rate-limit';

const L: WindowLimit = { limit: 3, windowMs: 1_000, marginMs: 100 };

describe('rate-limit arithmetic', () => {
  test('the default margin is 5% of the window, between 500 ms and 60 s', () => {
    assert.equal(defaultMarginMs(10_000), 500);
    assert.equal(defaultMarginMs(100_000), 5_000);
    assert.equal(defaultMarginMs(3_600_000), 60_000);
    assert.equal(slotFreeAt(0, { limit: 1, windowMs: 10_000 }), 10_500);
  });

  test('pruning keeps grants whose slot (window + margin) has not yet freed', () => {
    assert.deepEqual(pruneGrants([0, 500, 1_000, 1_001, 2_000], 2_100, L), [1_001, 2_000]);
    assert.deepEqual(pruneGrants([0], 1_099, L), [0]);
    assert.deepEqual(pruneGrants([0], 1_100, L), []);
    assert.deepEqual(pruneGrants([], 5, L), []);
  });

  test('available permits count down to zero, never below', () => {
    assert.equal(availablePermits([], 0, L), 3);
    assert.equal(availablePermits([0, 10], 20, L), 1);
    assert.equal(availablePermits([0, 10, 20, 30, 40], 50, L), 0);
    assert.equal(availablePermits([0, 10, 20], 1_105, L), 1);
  });

  test('the next free time is now while under the limit, else when the blocking grant frees', () => {
    assert.equal(nextFreeAt([0, 10], 50, L), 50);
    assert.equal(nextFreeAt([0, 10, 20], 50, L), 1_100);
    // Unsorted input and more grants than the limit (e.g. a lowered limit after continue-as-new).
    assert.equal(nextFreeAt([20, 0, 10, 30], 50, L), 1_110);
    assert.equal(nextFreeAt([0, 10, 20], 5_000, L), 5_000);
  });

  test('planning grants what fits FIFO and says when to wake for the rest', () => {
    assert.deepEqual(planGrants([], 2, 0, L), { grantNow: 2, wakeAtMs: null });
    assert.deepEqual(planGrants([], 5, 0, L), { grantNow: 3, wakeAtMs: 1_100 });
    assert.deepEqual(planGrants([0, 200], 4, 300, L), { grantNow: 1, wakeAtMs: 1_100 });
    assert.deepEqual(planGrants([0, 200, 300], 1, 400, L), { grantNow: 0, wakeAtMs: 1_100 });
    assert.deepEqual(planGrants([0, 200, 300], 0, 400, L), { grantNow: 0, wakeAtMs: null });
  });

  test('a simulated burst never puts more than limit grants in any window', () => {
    const limit: WindowLimit = { limit: 100, windowMs: 10_000, marginMs: 500 };
    const grants: number[] = [];
    let queued = 300;
    let now = 0;
    while (queued > 0) {
      const plan = planGrants(grants, queued, now, limit);
      for (let i = 0; i < plan.grantNow; i++) grants.push(now);
      queued -= plan.grantNow;
      if (plan.wakeAtMs !== null) now = plan.wakeAtMs;
    }
    assert.equal(grants.length, 300);
    for (const t of grants) {
      const inWindow = grants.filter((g) => g >= t && g < t + limit.windowMs).length;
      assert.ok(inWindow <= 100, `window from ${t} holds ${inWindow}`);
    }
    // Drains in two windows plus two margins: the theoretical minimum is two windows.
    assert.equal(now, 21_000);
    assert.equal(theoreticalDrainMs(300, limit), 20_000);
  });

  test('theoretical drain time', () => {
    assert.equal(theoreticalDrainMs(0, L), 0);
    assert.equal(theoreticalDrainMs(3, L), 0);
    assert.equal(theoreticalDrainMs(4, L), 1_000);
    assert.equal(theoreticalDrainMs(10, L), 3_000);
  });
});
