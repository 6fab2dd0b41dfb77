// test-lane: parallel
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeyedBatcher } from '../../src/activities/keyed-batcher';

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
  const batcher = new KeyedBatcher<number>(async (_k, items) => {
    sizes.push(items.length);
    await new Promise((r) => setImmediate(r));
  }, 3);
  await Promise.all(Array.from({ length: 8 }, (_, i) => batcher.add('k', i)));
  assert.deepEqual(sizes, [1, 3, 3, 1]);
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
