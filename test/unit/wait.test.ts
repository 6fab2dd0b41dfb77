// test-lane: parallel
// scripts/wait.ts: the one wait-until helper of the scripts, benchmarks and tests.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '../../scripts/wait';

test('waitFor returns the first truthy value', async () => {
  let calls = 0;
  assert.equal(await waitFor(() => (++calls >= 3 ? `after ${calls}` : null), { intervalMs: 1 }), 'after 3');
});

test('a timeout names what was awaited; given as a function, as it stood at the timeout', async () => {
  await assert.rejects(
    waitFor(() => false, { timeoutMs: 20, intervalMs: 5, what: 'the door' }),
    {
      message: 'timed out after 20 ms waiting for the door',
    },
  );
  let seen = 0;
  await assert.rejects(
    waitFor(() => ++seen < 0, { timeoutMs: 20, intervalMs: 5, what: () => `the door; last seen ${seen}` }),
    (err: Error) => /^timed out after 20 ms waiting for the door; last seen [2-9]\d*$/.test(err.message),
  );
});
