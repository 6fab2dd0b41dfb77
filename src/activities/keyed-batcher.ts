// Coalesces many small sends to the same destination into few: while a send for a key is in flight,
// items added for that key wait and leave together in the next send. A lone item leaves at once (no
// timer, no added latency); under a burst, N items cost a handful of sends instead of N.
//
// Used for the rate limiter's requests and reports: a burst of 300 agent jobs of one project would
// otherwise send 300 updates to one workflow, which the server applies one at a time.
export interface KeyedBatcherOptions {
  /** Items per send at most (a payload stays small). Default 200. */
  maxBatch?: number;
  /** Sends in flight per key at most. Default 1: items wait for the send ahead of them. */
  maxInFlight?: number;
  /**
   * With maxInFlight > 1: how long items wait for a send in flight before they leave in a send of
   * their own. A slow send (the first ask of a burst starts the limiter workflow: up to a second on a
   * busy server) then holds the items behind it for this long, not for its whole round trip.
   */
  overlapAfterMs?: number;
}

interface Pending<T, R> {
  items: T[];
  waiters: { resolve: (answer: R) => void; reject: (err: unknown) => void }[];
  inFlight: number;
  overlapTimer?: ReturnType<typeof setTimeout>;
}

export class KeyedBatcher<T, R = void> {
  private readonly keys = new Map<string, Pending<T, R>>();
  private readonly maxBatch: number;
  private readonly maxInFlight: number;
  private readonly overlapAfterMs: number;

  /** `send` delivers one batch and answers each item (same order), or nothing when items need no answer. */
  constructor(
    private readonly send: (key: string, items: T[]) => Promise<R[] | void>,
    options: KeyedBatcherOptions = {},
  ) {
    this.maxBatch = Math.max(1, options.maxBatch ?? 200);
    this.maxInFlight = Math.max(1, options.maxInFlight ?? 1);
    this.overlapAfterMs = Math.max(0, options.overlapAfterMs ?? 0);
  }

  /** Resolves with the item's answer once a send carrying it succeeded; rejects with that send's error. */
  add(key: string, item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      let pending = this.keys.get(key);
      if (!pending) {
        pending = { items: [], waiters: [], inFlight: 0 };
        this.keys.set(key, pending);
      }
      pending.items.push(item);
      pending.waiters.push({ resolve, reject });
      if (pending.inFlight === 0) this.sendNext(key, pending);
      else this.overlapLater(key, pending);
    });
  }

  /** Items behind a send in flight leave in a send of their own after overlapAfterMs, if one may start. */
  private overlapLater(key: string, pending: Pending<T, R>): void {
    if (pending.inFlight >= this.maxInFlight || pending.overlapTimer || pending.items.length === 0) return;
    pending.overlapTimer = setTimeout(() => {
      pending.overlapTimer = undefined;
      if (pending.inFlight < this.maxInFlight) this.sendNext(key, pending);
    }, this.overlapAfterMs);
  }

  private sendNext(key: string, pending: Pending<T, R>): void {
    clearTimeout(pending.overlapTimer);
    pending.overlapTimer = undefined;
    if (pending.items.length === 0) {
      if (pending.inFlight === 0) this.keys.delete(key);
      return;
    }
    const items = pending.items.splice(0, this.maxBatch);
    const waiters = pending.waiters.splice(0, items.length);
    pending.inFlight += 1;
    const settle = (answer: (w: (typeof waiters)[number], i: number) => void): void => {
      waiters.forEach(answer);
      pending.inFlight -= 1;
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
    this.overlapLater(key, pending);
  }
}
