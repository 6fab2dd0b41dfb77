// test-lane: parallel
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ActivityFailure, ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/common';
import * as apiErrors from '../../src/api/errors';
import {
  ActivityFailureType,
  ApiFailure,
  WorkflowFailure,
  causeChain,
  failureMessage,
  failureReason,
  failureType,
  firstApplicationFailure,
  rootApplicationFailure,
} from '../../src/shared/failures';

const activityFailure = (cause: Error) =>
  new ActivityFailure('activity failed', 'startExport', '1', 'NON_RETRYABLE_FAILURE', 'worker', cause);

/** An activity whose attempt timed out after an earlier attempt failed with `last`. */
function timedOutAfter(last: ApplicationFailure): ActivityFailure {
  const timeout = new TimeoutFailure('activity StartToClose timeout', undefined, 'START_TO_CLOSE');
  Object.assign(timeout, { cause: last });
  return activityFailure(timeout);
}

describe('failure catalogue', () => {
  test('every admin API error class has its code in ApiFailure', () => {
    const classes = Object.values(apiErrors as Record<string, unknown>).filter(
      (value) => typeof value === 'function' && value.prototype instanceof apiErrors.AdminApiError,
    ) as (new (message: string) => apiErrors.AdminApiError)[];
    const codes = classes.map((ErrorClass) => new ErrorClass('x').code);
    assert.equal(codes.length, Object.keys(ApiFailure).length);
    assert.deepEqual([...codes].sort(), Object.values(ApiFailure).sort());
  });

  test('no failure type is spelled twice across the three lists', () => {
    const all = [
      ...Object.values(ApiFailure),
      ...Object.values(ActivityFailureType),
      ...Object.values(WorkflowFailure),
    ];
    assert.equal(new Set(all).size, all.length);
  });
});

describe('cause chain', () => {
  test('outermost first, ends at a cause that is not an Error, bounded', () => {
    const root = ApplicationFailure.create({ type: 'PlanRequired', message: 'needs Enterprise' });
    const outer = activityFailure(root);
    assert.deepEqual(causeChain(outer), [outer, root]);
    assert.deepEqual(causeChain(Object.assign(new Error('a'), { cause: 'text' })).length, 1);
    assert.deepEqual(causeChain('not an error'), []);
    let deep: Error = new Error('0');
    for (let i = 1; i < 30; i++) deep = new Error(String(i), { cause: deep });
    assert.equal(causeChain(deep).length, 10);
  });

  test('workflows decide on the failure under activity wrappers only, never through a timeout', () => {
    const last = ApplicationFailure.create({
      type: ApiFailure.outcomeUnknown,
      message: 'maybe sent',
      nonRetryable: true,
    });
    assert.equal(failureType(activityFailure(last)), 'OutcomeUnknown');
    assert.equal(rootApplicationFailure(last), last);
    assert.equal(rootApplicationFailure(timedOutAfter(last)), undefined);
    assert.equal(failureType(activityFailure(new CancelledFailure('cancelled'))), undefined);
    assert.equal(failureMessage(activityFailure(last)), 'OutcomeUnknown: maybe sent');
    assert.equal(failureMessage(new Error('plain')), 'plain');
  });

  test('people and tests see the first ApplicationFailure anywhere in the chain', () => {
    const last = ApplicationFailure.create({ type: 'NetworkError', message: 'reset\nsecond line' });
    assert.equal(firstApplicationFailure(timedOutAfter(last)), last);
    assert.equal(failureReason(timedOutAfter(last)), 'NetworkError: reset');
    assert.equal(
      failureReason(activityFailure(new TimeoutFailure('heartbeat timeout', undefined, 'HEARTBEAT'))),
      'TimeoutFailure: heartbeat timeout',
    );
    assert.equal(failureReason(new Error('outer', { cause: new Error('inner\nmore') })), 'inner');
    assert.equal(failureReason(42), '42');
  });
});
