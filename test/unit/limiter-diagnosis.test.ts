// test-lane: parallel
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { temporal } from '@temporalio/proto';
import { msNumberToTs } from '@temporalio/common/lib/time';
import { describePendingTask } from '../../src/activities/limiter-diagnosis';

const { PendingWorkflowTaskState } = temporal.api.enums.v1;
const NOW = 1_800_000_000_000;

test('a task a worker took and did not complete says so, how long ago, and when another worker gets it', () => {
  const text = describePendingTask(
    {
      state: PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_STARTED,
      scheduledTime: msNumberToTs(NOW - 14_000),
      startedTime: msNumberToTs(NOW - 12_400),
      attempt: 1,
    },
    60_000,
    NOW,
  );
  assert.equal(
    text,
    'a worker took its workflow task 12 s ago and has not completed it; the server gives it to another worker 60 s after it was taken',
  );
});

test('a task no worker took yet says how long it has waited, with its attempt once retried', () => {
  const task = {
    state: PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED,
    scheduledTime: msNumberToTs(NOW - 7_000),
  };
  assert.equal(describePendingTask(task, 10_000, NOW), 'its workflow task has waited 7 s for a worker');
  assert.equal(
    describePendingTask({ ...task, attempt: 3 }, 10_000, NOW),
    'its workflow task has waited 7 s for a worker (attempt 3)',
  );
});

test('no pending task says so', () => {
  assert.equal(describePendingTask(undefined, 10_000, NOW), 'no workflow task pending');
});
