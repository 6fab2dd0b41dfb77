// test-lane: parallel
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeyedBatcher } from '../../src/activities/keyed-batcher';
import { waitFor } from '../../scripts/wait';

test('a lone item is sent at once; items added during a send go together in the next one, per key', async () => {
  const sends: [string, number[]][] = [];
  let release!: () => void;
  let gate = new Promise<void>((r) => (release = r));
  const batcher = new KeyedBatcher<number>(async (key, items) => {
    sends.push([key, [...items]]);
    await gate;
  });
  const first = batcher.add('a', 1);
  const queued = [batcher.add('a', 2), batcher.add('a', 3), batcher.add('b', 10)];
  assert.deepEqual(sends, [
    ['a', [1]],
    ['b', [10]],
  ]);
  const released = release;
  gate = Promise.resolve();
  released();
  await Promise.all([first, ...queued]);
  assert.deepEqual(sends, [
    ['a', [1]],
    ['b', [10]],
    ['a', [2, 3]],
  ]);
});

test('a failed send rejects exactly the items it carried; later items still go', async () => {
  let fail = true;
  const batcher = new KeyedBatcher<string>(async () => {
    if (fail) {
      fail = false;
      throw new Error('server unavailable');
    }
  });
  const results = await Promise.allSettled([batcher.add('k', 'x'), batcher.add('k', 'y')]);
  assert.deepEqual(
    results.map((r) => r.status),
    ['rejected', 'fulfilled'],
  );
});

test('a batch never exceeds maxBatch', async () => {
  const sizes: number[] = [];
  const batcher = new KeyedBatcher<number>(
    async (_k, items) => {
      sizes.push(items.length);
      await new Promise((r) => setImmediate(r));
    },
    { maxBatch: 3 },
  );
  await Promise.all(Array.from({ length: 8 }, (_, i) => batcher.add('k', i)));
  assert.deepEqual(sizes, [1, 3, 3, 1]);
});

test('with maxInFlight, items behind a slow send leave in their own after overlapAfterMs, never more sends than allowed', async () => {
  const sends: { items: number[]; atMs: number }[] = [];
  const gates: (() => void)[] = [];
  const started = Date.now();
  const batcher = new KeyedBatcher<number>(
    (_k, items) => {
      sends.push({ items: [...items], atMs: Date.now() - started });
      return new Promise<void>((r) => gates.push(r));
    },
    { maxInFlight: 2, overlapAfterMs: 30 },
  );
  const all = [batcher.add('k', 1)];
  all.push(batcher.add('k', 2), batcher.add('k', 3));
  assert.deepEqual(
    sends.map((s) => s.items),
    [[1]],
    'the lone first item leaves at once, the next ones wait',
  );
  await waitFor(() => sends.length === 2, { what: 'the second send', timeoutMs: 2_000, intervalMs: 5 });
  assert.deepEqual(sends[1]!.items, [2, 3]);
  assert.ok(sends[1]!.atMs >= 25, `the overlapping send waited ${sends[1]!.atMs} ms`);
  all.push(batcher.add('k', 4));
  await new Promise((r) => setTimeout(r, 80));
  assert.equal(sends.length, 2, 'two sends in flight: item 4 waits for one of them');
  gates[0]!();
  await waitFor(() => sends.length === 3, { what: 'the third send', timeoutMs: 2_000, intervalMs: 5 });
  assert.deepEqual(sends[2]!.items, [4]);
  gates.slice(1).forEach((g) => g());
  await Promise.all(all);
});

test('a send that throws synchronously rejects its items and the key keeps working', async () => {
  let calls = 0;
  const batcher = new KeyedBatcher<number>(() => {
    calls += 1;
    if (calls === 1) throw new Error('bad request');
    return Promise.resolve();
  });
  await assert.rejects(batcher.add('k', 1), /bad request/);
  await batcher.add('k', 2);
  assert.equal(calls, 2);
});
