// test-lane: parallel
// One permit (src/shared/rate-limiter.ts): its times travel unchanged from the limiter's answer to the
// job, and what earlier releases wrote is read into it where it enters.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { answerOf } from '../../src/activities/limiter-client';
import { permitOf } from '../../src/shared/rate-limiter';

const request = { requesterWorkflowId: 'agent-job:p:r', requestKey: 'k' };

test("a grant handed on ahead of time keeps its not-before time in the ask's answer", () => {
  const answer = answerOf(request, { requestKey: 'k', granted: true, notBeforeMs: 1_000, useByMs: 61_000 });
  assert.deepEqual(answer, { kind: 'granted', requestKey: 'k', notBeforeMs: 1_000, useByMs: 61_000 });
});

test('a grant without times and a queued answer keep what they had', () => {
  assert.deepEqual(answerOf(request, { requestKey: 'k', granted: true }), { kind: 'granted', requestKey: 'k' });
  assert.deepEqual(answerOf(request, { requestKey: 'k', granted: false, position: 2, expectedAtMs: 5 }), {
    kind: 'queued',
    position: 2,
    expectedAtMs: 5,
  });
});

test("a permit as received keeps its key and finite times only (an earlier release's granted: true is dropped)", () => {
  assert.deepEqual(permitOf({ requestKey: 'k', granted: true, useByMs: 9 } as object), { requestKey: 'k', useByMs: 9 });
  assert.deepEqual(permitOf({ requestKey: 'k', notBeforeMs: '5', useByMs: Number.NaN }), { requestKey: 'k' });
  assert.deepEqual(permitOf({ requestKey: 'k', notBeforeMs: 7, useByMs: Number.POSITIVE_INFINITY }), {
    requestKey: 'k',
    notBeforeMs: 7,
  });
  assert.equal(permitOf({ notBeforeMs: 7 }), null);
  assert.equal(permitOf({ requestKey: 42 }), null);
});
