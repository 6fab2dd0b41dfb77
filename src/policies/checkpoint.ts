// The send checkpoints (src/activities/send-checkpoint.ts) and how the workflow reads them back from a
// timed-out attempt: none, never sent (send again); 'answered', the result; 'sending', OutcomeUnknown.

export type SendCheckpoint<T> = { phase: 'sending' } | { phase: 'answered'; result: T };

/**
 * The checkpoint in a timed-out attempt's last heartbeat details: null only when it recorded none
 * (never sent); anything recorded but unreadable counts as 'sending' (maybe sent), never as unsent.
 */
export function readSendCheckpoint<T>(details: unknown): SendCheckpoint<T> | null {
  if (details === undefined || details === null) return null;
  const recorded = details as { phase?: unknown; result?: unknown };
  if (recorded.phase === 'answered' && recorded.result !== undefined && recorded.result !== null)
    return details as SendCheckpoint<T>;
  return { phase: 'sending' };
}
