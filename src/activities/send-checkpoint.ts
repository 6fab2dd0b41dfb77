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
// costs two short calls to Temporal per create or message and no workflow task (more only for an
// attempt that runs longer than ACTIVITY_KEEP_ALIVE_MS: the keep-alive).
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { SendCheckpoint } from '../policies/checkpoint';
import { ACTIVITY_KEEP_ALIVE_MS } from '../shared/heartbeat';
import { ApiFailure } from '../shared/failures';

/**
 * How long recording a checkpoint may take. Without a deadline a lost response held the attempt (and
 * its activity slot) until the attempt's own timeout, a minute later; with one, nothing-sent fails
 * fast and is tried again.
 */
export const CHECKPOINT_TIMEOUT_MS = 10_000;

/**
 * The answer's checkpoint is best effort (the completion carries the result too), so it gets little
 * time: while Temporal is unreachable it is the completion that must arrive before the attempt's
 * heartbeat timeout, 10 s after its last stored checkpoint. Given the full CHECKPOINT_TIMEOUT_MS, a
 * server restart held answered creates' completions until just after that timeout, and jobs the API
 * had created ended OutcomeUnknown (3 of 100 in a restart with creates answering during the outage).
 */
export const ANSWERED_CHECKPOINT_TIMEOUT_MS = 2_000;

/**
 * An attempt's heartbeats, all through the client so that none can overwrite a checkpoint: the
 * checkpoints themselves, and meanwhile the last one again every `keepAliveMs` (none before the
 * first: nothing sent), which keeps the attempt alive under its heartbeat timeout. One call at a
 * time, in order, so a keep-alive never lands after a newer checkpoint.
 */
export class CheckpointChannel<T> {
  private last: SendCheckpoint<T> | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly taskToken = Context.current().info.taskToken;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly temporal: Client,
    keepAliveMs = ACTIVITY_KEEP_ALIVE_MS,
  ) {
    this.timer = setInterval(() => void this.send(this.last).catch(() => undefined), keepAliveMs);
    this.timer.unref();
  }

  /** Resolves once Temporal has stored the checkpoint (or fails within timeoutMs). */
  record(checkpoint: SendCheckpoint<T>, timeoutMs = CHECKPOINT_TIMEOUT_MS): Promise<void> {
    this.last = checkpoint;
    return this.send(checkpoint, timeoutMs);
  }

  close(): void {
    clearInterval(this.timer);
  }

  private send(details: SendCheckpoint<T> | undefined, timeoutMs = CHECKPOINT_TIMEOUT_MS): Promise<void> {
    const sent = this.queue.then(() =>
      this.temporal.withDeadline(Date.now() + timeoutMs, () =>
        this.temporal.activity.heartbeat(this.taskToken, details),
      ),
    );
    this.queue = sent.catch(() => undefined);
    return sent;
  }
}

/** Runs `fn` with a checkpoint channel open for the whole attempt (its waits for a permit included). */
export async function withCheckpointChannel<T, R>(
  temporal: Client,
  fn: (channel: CheckpointChannel<T>) => Promise<R>,
): Promise<R> {
  const channel = new CheckpointChannel<T>(temporal);
  try {
    return await fn(channel);
  } finally {
    channel.close();
  }
}

/** `onAnswered` runs the moment the request has returned or failed, before the answer is recorded. */
export async function withSendCheckpoints<T>(
  channel: CheckpointChannel<T>,
  operation: string,
  send: () => Promise<T>,
  onAnswered?: () => void,
): Promise<T> {
  try {
    await channel.record({ phase: 'sending' });
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
  await channel.record({ phase: 'answered', result }, ANSWERED_CHECKPOINT_TIMEOUT_MS).catch(() => undefined);
  return result;
}
