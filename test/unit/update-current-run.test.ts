// test-lane: parallel
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { isUpdateAbortedByClose, updateCurrentRun } from '../../src/client/update';

// The server's answer to an update whose run continued as new before accepting it.
const aborted = () => new WorkflowNotFoundError('workflow update was aborted by closing workflow', 'wf-1', undefined);
const gone = () => new WorkflowNotFoundError('workflow execution already completed', 'wf-1', undefined);
const client = { workflow: { getHandle: () => ({}) as WorkflowHandle } } as unknown as Client;

test('an update aborted by a continue-as-new is sent again, to the run that follows', async () => {
  let calls = 0;
  const value = await updateCurrentRun(client, 'wf-1', async () => {
    if (++calls < 3) throw aborted();
    return 'accepted';
  });
  assert.equal(value, 'accepted');
  assert.equal(calls, 3);
});

test('a workflow that is gone, or any other error, is not retried', async () => {
  for (const error of [gone(), new Error('boom')]) {
    let calls = 0;
    await assert.rejects(
      updateCurrentRun(client, 'wf-1', async () => {
        calls++;
        throw error;
      }),
      error,
    );
    assert.equal(calls, 1);
  }
  assert.equal(isUpdateAbortedByClose(gone()), false);
  assert.equal(isUpdateAbortedByClose(aborted()), true);
});

test('retries are bounded: a run that keeps closing gives the error back', async () => {
  let calls = 0;
  await assert.rejects(
    updateCurrentRun(client, 'wf-1', async () => {
      calls++;
      throw aborted();
    }),
    /aborted by closing workflow/,
  );
  assert.equal(calls, 5);
});
