// test-lane: parallel
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deliverAll } from '../../src/workflows/deliver';

test('deliverAll also awaits a message sent while the earlier ones were awaited', async () => {
  const inFlight = new Set<Promise<unknown>>();
  const delivered: string[] = [];
  const send = (name: string, ms: number) => {
    const sent = new Promise<void>((resolve) => setTimeout(resolve, ms)).then(() => void delivered.push(name));
    inFlight.add(sent);
    void sent.finally(() => inFlight.delete(sent));
  };
  send('first', 10);
  // A handler that runs while the first is awaited sends a second, slower one.
  setTimeout(() => send('second', 40), 5);
  let handlerChecks = 0;
  await deliverAll(
    inFlight,
    () => true,
    async () => void handlerChecks++,
  );
  assert.deepEqual(delivered, ['first', 'second']);
  assert.equal(inFlight.size, 0);
  assert.ok(handlerChecks >= 2, 'the handlers were checked again after the later message');
});

test('deliverAll waits for running handlers even with nothing in flight', async () => {
  let running = true;
  setTimeout(() => (running = false), 20);
  const waits: number[] = [];
  await deliverAll(
    new Set(),
    () => !running,
    () =>
      new Promise<void>((resolve) => {
        waits.push(Date.now());
        const poll = setInterval(() => !running && (clearInterval(poll), resolve()), 2);
      }),
  );
  assert.equal(running, false);
  assert.equal(waits.length, 1);
});
