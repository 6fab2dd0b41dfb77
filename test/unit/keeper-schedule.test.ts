// test-lane: parallel
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { refreshAtMs, refreshMarginMs, refreshMarginProblems, retryDelayMs } from '../../src/policies/keeper-schedule';

const MIN = 60_000;
const HOUR = 60 * MIN;

describe('refreshMarginMs', () => {
  test('defaults to 10% of the lifetime', () => {
    assert.equal(refreshMarginMs(HOUR), 6 * MIN);
    assert.equal(refreshMarginMs(24 * HOUR), 2.4 * HOUR);
  });

  test('is at least one minute by default', () => {
    assert.equal(refreshMarginMs(5 * MIN), MIN);
    assert.equal(refreshMarginMs(2 * MIN), MIN);
  });

  test('the one-minute floor stops at half the lifetime (short links: refresh at half-life, not continuously)', () => {
    assert.equal(refreshMarginMs(30_000), 15_000);
    assert.equal(refreshMarginMs(90_000), 45_000);
    assert.equal(refreshMarginMs(0), 0);
    assert.equal(refreshMarginMs(-5), 0);
    // An explicit fraction is honoured even above one half.
    assert.equal(refreshMarginMs(HOUR, { fraction: 0.75 }), 45 * MIN);
  });

  test('honours a configured fraction and minimum', () => {
    assert.equal(refreshMarginMs(HOUR, { fraction: 0.25 }), 15 * MIN);
    assert.equal(refreshMarginMs(HOUR, { fraction: 0.01, minMs: 10 * MIN }), 10 * MIN);
    assert.equal(refreshMarginMs(HOUR, { fraction: 0, minMs: 0 }), 0);
  });
});

describe('refreshAtMs', () => {
  test('expiry minus the margin', () => {
    const issued = Date.UTC(2025, 0, 1);
    assert.equal(refreshAtMs(issued, issued + HOUR), issued + 54 * MIN);
    assert.equal(refreshAtMs(issued, issued + 7 * 24 * HOUR), issued + 7 * 24 * HOUR * 0.9);
  });

  test('always before expiry when the margin is positive', () => {
    for (const lifetime of [1, 1_000, MIN, 10 * MIN, HOUR, 30 * 24 * HOUR]) {
      const at = refreshAtMs(0, lifetime);
      assert.ok(at < lifetime, `lifetime ${lifetime}`);
      assert.ok(at >= 0);
    }
  });

  test('a link shorter-lived than the margin is refreshed at half-life; an expired one at once', () => {
    assert.equal(refreshAtMs(1_000, 1_000 + 30_000), 16_000);
    assert.equal(refreshAtMs(10_000, 5_000), 10_000);
  });
});

describe('retryDelayMs', () => {
  test('grows exponentially from the base to the cap', () => {
    assert.deepEqual(
      [1, 2, 3, 4].map((n) => retryDelayMs(n)),
      [15_000, 30_000, 60_000, 120_000],
    );
    assert.equal(retryDelayMs(50), 10 * MIN);
    assert.equal(retryDelayMs(0), 15_000);
  });

  test('leaves room for several attempts before a live link expires', () => {
    assert.equal(retryDelayMs(10, 4 * MIN), MIN);
    assert.equal(retryDelayMs(1, 8_000), 2_000);
    assert.equal(retryDelayMs(5, 0), 1_000);
  });

  test('honours a custom back-off', () => {
    assert.equal(retryDelayMs(3, undefined, { baseMs: 1_000, maxMs: 3_000 }), 3_000);
  });
});

test('refreshMarginProblems', () => {
  assert.deepEqual(refreshMarginProblems(undefined), []);
  assert.deepEqual(refreshMarginProblems({ fraction: 0.2, minMs: 0 }), []);
  assert.equal(refreshMarginProblems({ fraction: 1 }).length, 1);
  assert.equal(refreshMarginProblems({ fraction: -0.1, minMs: -1 }).length, 2);
});
