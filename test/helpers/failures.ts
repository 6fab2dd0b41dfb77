// Assertions on a workflow's failure chain, shared by the end-to-end tests.
import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';

/** The ApplicationFailure of a workflow that must fail (WorkflowFailedError -> ApplicationFailure). */
export async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => assert.fail('the workflow should have failed'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof WorkflowFailedError, `expected WorkflowFailedError, got ${String(err)}`);
  assert.ok(err.cause instanceof ApplicationFailure, `expected an ApplicationFailure cause, got ${String(err.cause)}`);
  return err.cause;
}
