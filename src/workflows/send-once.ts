// One non-idempotent call (agent create or message), made at most once: each attempt is an activity
// without retries; this retries only what was surely not sent (or a 429), and decides a timed-out
// attempt by its send checkpoints (src/policies/checkpoint.ts).
import { ActivityFailure, ApplicationFailure, sleep, TimeoutFailure } from '@temporalio/workflow';
import type { CallResult } from '../activities/agent';
import { readSendCheckpoint } from '../policies/checkpoint';
import { ApiFailure, nonRetryable } from '../shared/failures';

const SAFE_RETRY = { initialMs: 1_000, maxMs: 60_000 };

export async function callOnceSafely<T>(call: () => Promise<CallResult<T>>): Promise<CallResult<T>> {
  for (let attempt = 1; ; attempt++) {
    let retryAfterMs: number | undefined;
    try {
      return await call();
    } catch (err) {
      const cause = err instanceof ActivityFailure ? err.cause : undefined;
      if (cause instanceof ApplicationFailure && !cause.nonRetryable) {
        // Retry-After travels in the failure's details (nextRetryDelay is not decoded in workflows).
        retryAfterMs = (cause.details?.[0] as { retryAfterMs?: number } | undefined)?.retryAfterMs;
      } else if (cause instanceof TimeoutFailure) {
        const checkpoint = readSendCheckpoint<T>(cause.lastHeartbeatDetails);
        if (checkpoint?.phase === 'answered') return { admitted: true, value: checkpoint.result, fromCheckpoint: true };
        if (checkpoint?.phase === 'sending') {
          throw nonRetryable(
            ApiFailure.outcomeUnknown,
            'the attempt timed out after sending its request (its worker may have stopped mid-request)',
            { cause: err as Error },
          );
        }
        // No checkpoint: the request was never sent, so trying again cannot duplicate it.
      } else {
        throw err;
      }
    }
    await sleep(retryAfterMs ?? Math.min(SAFE_RETRY.maxMs, SAFE_RETRY.initialMs * 2 ** (attempt - 1)));
  }
}
