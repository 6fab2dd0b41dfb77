// test-lane: parallel
// Who reports a permit's use when its call failed (src/workflows/permits.ts reportedBy).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ActivityFailure, ApplicationFailure, RetryState, TimeoutFailure, TimeoutType } from '@temporalio/common';
import { ApiFailure, WorkflowFailure } from '../../src/shared/failures';
import { reportedBy } from '../../src/workflows/permits';

const activityFailed = (cause: Error) =>
  new ActivityFailure('activity failed', 'createAgentJob', '1', RetryState.NON_RETRYABLE_FAILURE, 'worker', cause);

test("the activity's own failure (it reported, or sent nothing) is not reported again by the job", () => {
  const refused = ApplicationFailure.create({
    type: WorkflowFailure.invalidInput,
    message: 'invalid agent input',
    nonRetryable: true,
  });
  assert.equal(reportedBy(activityFailed(refused)), 'activity or nobody');
});

test('a timed-out attempt, and OutcomeUnknown thrown by the workflow, are reported by the job', () => {
  const timeout = new TimeoutFailure('timed out', undefined, TimeoutType.START_TO_CLOSE);
  assert.equal(reportedBy(activityFailed(timeout)), 'job');
  const unknown = ApplicationFailure.create({
    type: ApiFailure.outcomeUnknown,
    message: 'unknown',
    nonRetryable: true,
  });
  assert.equal(reportedBy(unknown), 'job');
});
