// A first-come, first-served lock for workflow code (SDK 1.24 has none): handlers that must not
// interleave take it in turn, as in samples-typescript `mutex` and `safe-message-handlers`. Waiters
// are woken in the order they asked (tickets), which is deterministic on replay.
import { condition } from '@temporalio/workflow';

export class Mutex {
  /** Tickets handed out, and the ticket now served: the lock is held while they differ. */
  private issued = 0;
  private served = 0;

  get locked(): boolean {
    return this.served < this.issued;
  }

  /** Runs `fn` once every earlier holder has finished, and lets the next one in when it settles. */
  async runExclusive<T>(fn: () => Promise<T>): Promise<T> {
    const ticket = this.issued++;
    await condition(() => this.served === ticket);
    try {
      return await fn();
    } finally {
      this.served += 1;
    }
  }

  /**
   * The lock as runs recorded before it had it: every waiter enters, together, once the lock is free.
   * Kept for those runs only (agentJob's MESSAGES_IN_TURN_PATCH), so they replay the same commands.
   */
  async runWhenFree<T>(fn: () => Promise<T>): Promise<T> {
    await condition(() => !this.locked);
    this.issued += 1;
    try {
      return await fn();
    } finally {
      this.served += 1;
    }
  }

  /** Resolves once nobody holds the lock. */
  released(): Promise<void> {
    return condition(() => !this.locked);
  }
}
