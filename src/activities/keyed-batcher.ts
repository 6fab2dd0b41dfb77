// Coalesces sends per key: while one is in flight, items added for that key leave together in the
// next. A lone item leaves at once; a burst of N costs a few sends. Used for the limiter's asks and
// reports, which the server would otherwise apply to one workflow one at a time.
type Waiter<R> = { resolve: (answer: R) => void; reject: (err: unknown) => void };

export class KeyedBatcher<T, R = void> {
  /** Per key: the items waiting for the next send, and their waiters (same order). */
  private readonly pending = new Map<string, { items: T[]; waiters: Waiter<R>[] }>();

  /** `send` delivers one batch and answers each item (same order), or nothing when items need no answer. */
  constructor(
    private readonly send: (key: string, items: T[]) => Promise<R[] | void>,
    private readonly maxBatch = 200,
  ) {}

  /** Resolves with the item's answer once a send carrying it succeeded; rejects with that send's error. */
  add(key: string, item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const waiting = this.pending.get(key);
      if (waiting) {
        waiting.items.push(item);
        waiting.waiters.push({ resolve, reject });
        return;
      }
      this.pending.set(key, { items: [], waiters: [] });
      void this.sendFrom(key, [item], [{ resolve, reject }]);
    });
  }

  /** Sends `items`, then whatever was added for `key` meanwhile, until nothing is left. */
  private async sendFrom(key: string, items: T[], waiters: Waiter<R>[]): Promise<void> {
    for (;;) {
      try {
        const answers = await this.send(key, items);
        waiters.forEach((w, i) => w.resolve((answers ? answers[i] : undefined) as R));
      } catch (err) {
        waiters.forEach((w) => w.reject(err));
      }
      const next = this.pending.get(key);
      if (!next || next.items.length === 0) return void this.pending.delete(key);
      items = next.items.splice(0, this.maxBatch);
      waiters = next.waiters.splice(0, items.length);
    }
  }
}
