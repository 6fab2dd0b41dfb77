// test-lane: parallel
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { temporal } from '@temporalio/proto';
import { msNumberToTs } from '@temporalio/common/lib/time';
import { defaultPayloadConverter } from '@temporalio/common';
import { describePendingTask, describeTaskFailure, isUndecodable } from '../../src/activities/limiter-diagnosis';
import { encryptPayload } from '../../src/codec';

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

const { WorkflowTaskFailedCause } = temporal.api.enums.v1;
const keyError = (encodedAttributes: temporal.api.common.v1.IPayload) => ({
  cause: WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE,
  identity: '4242@fleet-2',
  // As the TypeScript worker reports a codec's error: no failure info, its name first in the stack.
  failure: { message: 'Encoded failure', encodedAttributes },
});

test('a failing task says the failure type, its message (from encoded attributes), cause and worker', () => {
  const message = 'payload encrypted with key "k1", which is not in PAYLOAD_ENCRYPTION_KEYS_FILE (/keys)';
  const stack = `PayloadKeyError: ${message}\n    at EncryptionCodec.decrypt`;
  const failed = keyError(defaultPayloadConverter.toPayload({ message, stack_trace: stack }));
  assert.equal(
    describeTaskFailure(failed),
    `its workflow task fails: PayloadKeyError: ${message} (WORKFLOW_WORKER_UNHANDLED_FAILURE, by worker 4242@fleet-2)`,
  );
  assert.ok(isUndecodable(failed));
});

test('an encrypted failure message names its key; a plain message stands as it is; other failures are not a missing key', () => {
  const encrypted = encryptPayload(defaultPayloadConverter.toPayload({ message: 'secret' }), 'k7', Buffer.alloc(32));
  assert.match(describeTaskFailure(keyError(encrypted)), /fails: \(its message is encrypted with key "k7"\)/);
  assert.ok(!isUndecodable(keyError(encrypted)), 'a type nobody can read is not taken for a missing key');
  const typed = { failure: { message: 'x', applicationFailureInfo: { type: 'PayloadKeyError' } } };
  assert.ok(isUndecodable(typed));
  const nondeterminism = {
    cause: WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR,
    failure: { message: '[TMPRL1100] Nondeterminism error:\n  timer 3' },
  };
  assert.equal(
    describeTaskFailure(nondeterminism),
    'its workflow task fails: [TMPRL1100] Nondeterminism error: timer 3 (NON_DETERMINISTIC_ERROR)',
  );
  assert.ok(!isUndecodable(nondeterminism));
  assert.ok(!isUndecodable(undefined));
});
