// Coalesces many small sends to the same destination into few: while one send for a key is in flight,
// items added for that key wait and leave together in the next send. A lone item leaves at once (no
// timer, no added latency); under a burst, N items cost a handful of sends instead of N.
//
// Used for the rate limiter's signals: a burst of 300 agent jobs of one project would otherwise send
// 300 signal-with-starts to one workflow, which the server applies one at a time.
export class KeyedBatcher<T, R = void> {
  private readonly pending = new Map<
    string,
    { items: T[]; waiters: { resolve: (answer: R) => void; reject: (err: unknown) => void }[] }
  >();
  private readonly sending = new Set<string>();

  /**
   * `send` delivers one batch and answers each item (same order), or nothing when items need no answer.
   * `maxBatch` bounds one send (a payload stays small).
   */
  constructor(
    private readonly send: (key: string, items: T[]) => Promise<R[] | void>,
    private readonly maxBatch = 200,
  ) {}

  /** Resolves with the item's answer once a send carrying it succeeded; rejects with that send's error. */
  add(key: string, item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      let batch = this.pending.get(key);
      if (!batch) {
        batch = { items: [], waiters: [] };
        this.pending.set(key, batch);
      }
      batch.items.push(item);
      batch.waiters.push({ resolve, reject });
      if (!this.sending.has(key)) void this.flush(key);
    });
  }

  private async flush(key: string): Promise<void> {
    this.sending.add(key);
    try {
      for (;;) {
        const batch = this.pending.get(key);
        if (!batch || batch.items.length === 0) return;
        const items = batch.items.splice(0, this.maxBatch);
        const waiters = batch.waiters.splice(0, items.length);
        if (batch.items.length === 0) this.pending.delete(key);
        try {
          const answers = await this.send(key, items);
          waiters.forEach((w, i) => w.resolve((answers ? answers[i] : undefined) as R));
        } catch (err) {
          for (const w of waiters) w.reject(err);
        }
      }
    } finally {
      this.sending.delete(key);
    }
  }
}
