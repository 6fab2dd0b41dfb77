// Durable checkpoints around a non-idempotent request (agent create, message), recorded as heartbeat
// details: 'sending' (stored before the request leaves) and 'answered' with the result. A worker killed
// mid-attempt leaves the workflow what it needs to decide (src/policies/checkpoint.ts).
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { SendCheckpoint } from '../policies/checkpoint';
import { ACTIVITY_KEEP_ALIVE_MS } from '../shared/heartbeat';
import { ApiFailure } from '../shared/failures';

/** How long recording a checkpoint may take: a lost response fails fast (nothing sent) instead of holding the slot. */
export const CHECKPOINT_TIMEOUT_MS = 10_000;

/** The answer's checkpoint is best effort (the completion carries the result too): little time for it. */
export const ANSWERED_CHECKPOINT_TIMEOUT_MS = 2_000;

/**
 * An attempt's heartbeats, sent through the client so that each is known to be stored: the checkpoints,
 * and the last one again every `keepAliveMs`. One call at a time, so none overwrites a newer one.
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
  await channel.record({ phase: 'sending' }).catch((err: Error) => {
    throw ApplicationFailure.retryable(
      `${operation} was not sent: Temporal did not record the attempt first (${err.message})`,
      ApiFailure.networkError,
    );
  });
  let result: T;
  try {
    result = await send();
  } finally {
    onAnswered?.();
  }
  await channel.record({ phase: 'answered', result }, ANSWERED_CHECKPOINT_TIMEOUT_MS).catch(() => undefined);
  return result;
}
