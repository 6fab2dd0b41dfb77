// test-lane: parallel
// The rate limiter's window rule: the bounds a window keeps (at start, in AGENT_RATE_LIMIT) and an ask
// naming another window than the limiter's refused, naming both.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  askWindowProblem,
  formatRateWindow,
  limiterInputProblems,
  rateWindowProblems,
} from '../../src/policies/validation/rate-limiter';

const HOUR = 3_600_000;
const API = { limit: 100, windowMs: HOUR };

describe('the rate window', () => {
  test('is written as AGENT_RATE_LIMIT writes it', () => {
    assert.equal(formatRateWindow(API), '100/1h');
    assert.equal(formatRateWindow({ limit: 1e9, windowMs: HOUR }), '1000000000/1h');
    assert.equal(formatRateWindow({ limit: 5, windowMs: 10_000 }), '5/10s');
    assert.equal(formatRateWindow({ limit: 5, windowMs: 90_000 }), '5/90s');
    assert.equal(formatRateWindow({ limit: 1, windowMs: 1_500 }), '1/1500ms');
    assert.equal(formatRateWindow({ limit: 2, windowMs: 2 * 86_400_000 }), '2/2d');
  });

  test('keeps sane bounds: a whole limit from 1 to a million, a whole window from 100 ms to a day', () => {
    for (const ok of [API, { limit: 1, windowMs: 100 }, { limit: 1_000_000, windowMs: 86_400_000 }])
      assert.deepEqual(rateWindowProblems(ok), [], JSON.stringify(ok));
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ limit: 1e9, windowMs: HOUR }, /^limit must be a whole number from 1 to 1000000$/],
      [{ limit: 0, windowMs: HOUR }, /^limit/],
      [{ limit: -5, windowMs: HOUR }, /^limit/],
      [{ limit: 2.5, windowMs: HOUR }, /^limit/],
      [{ limit: '100', windowMs: HOUR }, /^limit/],
      [{ limit: Number.NaN, windowMs: HOUR }, /^limit/],
      [{ limit: 100, windowMs: 1 }, /^windowMs must be a whole number of milliseconds from 100 to 86400000/],
      [{ limit: 100, windowMs: 1e15 }, /^windowMs/],
      [{ limit: 100, windowMs: 0.5 }, /^windowMs/],
      [{ limit: 100, windowMs: Number.POSITIVE_INFINITY }, /^windowMs/],
      [{ limit: 100 }, /^windowMs/],
    ];
    for (const [window, problem] of bad) {
      const problems = rateWindowProblems(window);
      assert.equal(problems.length, 1, JSON.stringify(window));
      assert.match(problems[0]!, problem);
    }
  });

  test("a limiter's start: project, window, and a margin that may only widen the default", () => {
    assert.deepEqual(limiterInputProblems({ projectId: 'p', ...API }), []);
    assert.deepEqual(limiterInputProblems({ projectId: 'p', ...API, marginMs: 30_000, maxHistoryEvents: 2_000 }), []);
    const cases: [unknown, RegExp][] = [
      [null, /input must be an object/],
      [{ ...API }, /projectId is required/],
      [{ projectId: 'p', limit: 1e9, windowMs: HOUR }, /limit must be/],
      [
        { projectId: 'p', ...API, marginMs: -1e9 },
        /marginMs, when given, must be a whole number from 30000 to windowMs/,
      ],
      [{ projectId: 'p', limit: 5, windowMs: 10_000, marginMs: 0 }, /marginMs, .* from 250 to windowMs \(10000\)/],
      [{ projectId: 'p', ...API, marginMs: 2 * HOUR }, /marginMs/],
      [{ projectId: 'p', ...API, maxHistoryEvents: 1 }, /maxHistoryEvents, when given, must be a whole number from 10/],
      [{ projectId: 'p', ...API, maxHistoryEvents: 1e9 }, /maxHistoryEvents/],
    ];
    for (const [input, problem] of cases) assert.match(limiterInputProblems(input).join('; '), problem);
  });

  test('an ask naming another window than the limiter enforces is refused, naming both', () => {
    assert.equal(askWindowProblem({ ...API }, API), null);
    assert.equal(askWindowProblem(undefined, API), null, 'an ask that names no window is answered under the limiter’s');
    assert.equal(
      askWindowProblem({ limit: 1e9, windowMs: HOUR }, API),
      'asked for 1000000000/1h (limit must be a whole number from 1 to 1000000), this limiter enforces 100/1h',
    );
    assert.equal(
      askWindowProblem({ limit: 100, windowMs: 10_000 }, API),
      'asked for 100/10s, this limiter enforces 100/1h',
    );
    assert.equal(askWindowProblem({ limit: 3, windowMs: HOUR }, API), 'asked for 3/1h, this limiter enforces 100/1h');
    // Stricter is refused too: one window per limiter, whichever way it differs.
    assert.match(askWindowProblem({ limit: 100, windowMs: 2 * HOUR }, API)!, /^asked for 100\/2h, this limiter/);
    assert.match(
      askWindowProblem({ limit: '100', windowMs: HOUR }, API)!,
      /^asked for \{"limit":"100".*enforces 100\/1h$/,
    );
    assert.match(askWindowProblem('100/1h', API)!, /^asked for "100\/1h", this limiter enforces 100\/1h$/);
    assert.match(askWindowProblem({}, API)!, /^asked for \{\} \(limit must .*windowMs must .*\), this limiter/);
  });
});
