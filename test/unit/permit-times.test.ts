// test-lane: parallel
// A grant's times travel unchanged from the limiter's answer to the job's permit (src/shared/rate-limiter.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { answerOf } from '../../src/activities/limiter-client';
import { permitTimes } from '../../src/shared/rate-limiter';

test("a grant handed on ahead of time keeps its not-before time in the ask's answer", () => {
  const answer = answerOf({ requestKey: 'k', granted: true, notBeforeMs: 1_000, useByMs: 61_000 });
  assert.deepEqual(answer, { kind: 'granted', notBeforeMs: 1_000, useByMs: 61_000 });
});

test("an older release's grant (no times) and a queued answer keep what they had", () => {
  assert.deepEqual(answerOf({ requestKey: 'k', granted: true }), { kind: 'granted' });
  assert.deepEqual(answerOf({ requestKey: 'k', granted: false, position: 2, expectedAtMs: 5 }), {
    kind: 'queued',
    position: 2,
    expectedAtMs: 5,
  });
});

test('times that are not finite numbers are dropped, nothing else is taken', () => {
  const received = { notBeforeMs: '5', useByMs: Number.NaN, requestKey: 'k' };
  assert.deepEqual(permitTimes(received), {});
  assert.deepEqual(permitTimes(undefined), {});
  assert.deepEqual(permitTimes({ notBeforeMs: 7, useByMs: Number.POSITIVE_INFINITY }), { notBeforeMs: 7 });
});
