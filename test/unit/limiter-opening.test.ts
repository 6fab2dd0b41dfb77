// test-lane: parallel
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { grantSparePermits, openLimiter } from '../../src/policies/limiter-opening';
import { estimateGrantAt, grantedSlotFreeAt, permitUseByMs } from '../../src/policies/rate-window';

const ask = (i: number, key = 'create') => ({ requesterWorkflowId: `job-${i}`, requestKey: `${key}-${i}` });
const NOW = 1_800_000_000_000;
const LIMIT = { limit: 3, windowMs: 10_000 };

test('the first `limit` asks are granted at once, the rest queued FIFO with their positions', () => {
  const asks = [1, 2, 3, 4, 5].map((i) => ask(i));
  const { state, answers } = openLimiter(asks, NOW, LIMIT);
  assert.deepEqual(
    answers.map((a) => a.granted),
    [true, true, true, false, false],
  );
  assert.deepEqual(
    state.grants.map((g) => g.requesterWorkflowId),
    ['job-1', 'job-2', 'job-3'],
  );
  assert.deepEqual(state.queue, [ask(4), ask(5)]);
  assert.deepEqual(
    answers.slice(3).map((a) => a.position),
    [0, 1],
  );
});

test('grants hold their slot as a lease, with the use-by time the limiter itself would give', () => {
  const { state, answers } = openLimiter([ask(1)], NOW, LIMIT);
  const freeAtMs = grantedSlotFreeAt(NOW, LIMIT);
  assert.deepEqual(state.grants, [{ ...ask(1), atMs: NOW, freeAtMs }]);
  assert.equal(answers[0]!.useByMs, permitUseByMs(freeAtMs, LIMIT));
  assert.ok(answers[0]!.useByMs! > NOW, 'a fresh grant can be used now');
});

test('a queued ask expects its permit when the grant ahead of it frees', () => {
  const { state, answers } = openLimiter(
    [1, 2, 3, 4].map((i) => ask(i)),
    NOW,
    LIMIT,
  );
  const expected = estimateGrantAt(
    state.grants.map((g) => g.freeAtMs),
    0,
    NOW,
    LIMIT,
  );
  assert.equal(answers[3]!.expectedAtMs, expected);
  assert.ok(expected > NOW);
});

test('a repeated ask (a retried activity) gets the same answer and takes no second slot', () => {
  const { state, answers } = openLimiter([ask(1), ask(2), ask(1), ask(3), ask(4)], NOW, LIMIT);
  assert.equal(state.grants.length, 3);
  assert.deepEqual(answers[2], answers[0]);
  assert.deepEqual(state.queue, [ask(4)]);
});

test('the limit asked with is remembered, so the limiter applies it from its first task', () => {
  const { state } = openLimiter([ask(1)], NOW, LIMIT);
  assert.deepEqual(state.seenLimits, [{ limit: 3, windowMs: 10_000, seenAtMs: NOW }]);
});

test('spares an older worker asks for fit after the asks, only what leaves half the window free, none once it queues', () => {
  const limit = { limit: 10, windowMs: 3_600_000 };
  const spares = { holder: 'spare-permits:p1', keys: ['s1', 's2', 's3', 's4', 's5'] };
  const { state, answers } = openLimiter([ask(1), ask(2)], NOW, limit);
  const spareAnswers = grantSparePermits(state, spares, NOW, limit);
  // 10 slots: 2 asks, 5 kept free, so 3 of the 5 spares.
  assert.deepEqual(
    [...answers, ...spareAnswers].map((a) => [a.requestKey, a.granted]),
    [
      ['create-1', true],
      ['create-2', true],
      ['s1', true],
      ['s2', true],
      ['s3', true],
    ],
  );
  assert.deepEqual(
    state.grants.slice(2).map((g) => [g.requesterWorkflowId, g.requestKey]),
    [
      ['spare-permits:p1', 's1'],
      ['spare-permits:p1', 's2'],
      ['spare-permits:p1', 's3'],
    ],
  );
  assert.equal(spareAnswers[0]!.useByMs, permitUseByMs(grantedSlotFreeAt(NOW, limit), limit));

  const full = openLimiter(
    [1, 2, 3, 4].map((i) => ask(i)),
    NOW,
    LIMIT,
  );
  assert.equal(grantSparePermits(full.state, spares, NOW, LIMIT).length, 0, 'a queued limiter grants no spares');
  assert.equal(full.state.grants.length, 3);
});
