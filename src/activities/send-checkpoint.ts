// Durable checkpoints around a non-idempotent request (agent create and message), so that a worker
// killed mid-attempt leaves behind exactly what the workflow needs to decide without guessing.
//
// Before sending, the attempt records {phase: 'sending'} as its heartbeat details, and waits until
// Temporal has stored it; after the API answered, it records {phase: 'answered', result}. When the
// attempt then times out (its worker vanished), the workflow reads the last details from the timeout:
//   - none: the request was never sent, so sending it now cannot duplicate anything;
//   - 'answered': the API's answer survived the worker, and is the result;
//   - 'sending': the request may have reached the API: OutcomeUnknown, as before.
// Heartbeat details live in the workflow's mutable state (persisted, never in history events), so this
// costs two short calls to Temporal per create or message and no workflow task.
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { SendCheckpoint } from '../policies/checkpoint';
import { ApiFailure } from '../shared/failures';

/**
 * How long recording a checkpoint may take. Without a deadline a lost response held the attempt (and
 * its activity slot) until the attempt's own timeout, a minute later; with one, nothing-sent fails
 * fast and is tried again.
 */
export const CHECKPOINT_TIMEOUT_MS = 10_000;

/** `onAnswered` runs the moment the request has returned or failed, before the answer is recorded. */
export async function withSendCheckpoints<T>(
  temporal: Client,
  operation: string,
  send: () => Promise<T>,
  onAnswered?: () => void,
): Promise<T> {
  const { taskToken } = Context.current().info;
  const record = (checkpoint: SendCheckpoint<T>): Promise<void> =>
    temporal.withDeadline(Date.now() + CHECKPOINT_TIMEOUT_MS, () => temporal.activity.heartbeat(taskToken, checkpoint));
  try {
    await record({ phase: 'sending' });
  } catch (err) {
    // Nothing was sent: safe for the workflow to try again.
    throw ApplicationFailure.create({
      type: ApiFailure.networkError,
      message: `${operation} was not sent: Temporal did not record the attempt first (${(err as Error).message})`,
      nonRetryable: false,
    });
  }
  let result: T;
  try {
    result = await send();
  } finally {
    onAnswered?.();
  }
  // Best effort: if this is lost, the completion below still carries the result.
  await record({ phase: 'answered', result }).catch(() => undefined);
  return result;
}
