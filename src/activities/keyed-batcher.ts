// Coalesces sends per key: while one is in flight, items added for that key leave together in the
// next. A lone item leaves at once; a burst of N costs a few sends. Used for the limiter's asks and
// reports, which the server would otherwise apply to one workflow one at a time.
interface Pending<T, R> {
  items: T[];
  waiters: { resolve: (answer: R) => void; reject: (err: unknown) => void }[];
  sending: boolean;
}

export class KeyedBatcher<T, R = void> {
  private readonly keys = new Map<string, Pending<T, R>>();
  private readonly maxBatch: number;

  /**
   * `send` delivers one batch and answers each item (same order), or nothing when items need no answer.
   * maxBatch (default 200) keeps a payload small.
   */
  constructor(
    private readonly send: (key: string, items: T[]) => Promise<R[] | void>,
    options: { maxBatch?: number } = {},
  ) {
    this.maxBatch = Math.max(1, options.maxBatch ?? 200);
  }

  /** Resolves with the item's answer once a send carrying it succeeded; rejects with that send's error. */
  add(key: string, item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      let pending = this.keys.get(key);
      if (!pending) {
        pending = { items: [], waiters: [], sending: false };
        this.keys.set(key, pending);
      }
      pending.items.push(item);
      pending.waiters.push({ resolve, reject });
      if (!pending.sending) this.sendNext(key, pending);
    });
  }

  private sendNext(key: string, pending: Pending<T, R>): void {
    if (pending.items.length === 0) {
      pending.sending = false;
      this.keys.delete(key);
      return;
    }
    const items = pending.items.splice(0, this.maxBatch);
    const waiters = pending.waiters.splice(0, items.length);
    pending.sending = true;
    const settle = (answer: (w: (typeof waiters)[number], i: number) => void): void => {
      waiters.forEach(answer);
      this.sendNext(key, pending);
    };
    let sent: Promise<R[] | void>;
    try {
      sent = this.send(key, items);
    } catch (err) {
      sent = Promise.reject(err);
    }
    void sent.then(
      (answers) => settle((w, i) => w.resolve((answers ? answers[i] : undefined) as R)),
      (err: unknown) => settle((w) => w.reject(err)),
    );
  }
}
