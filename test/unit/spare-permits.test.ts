import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PermitRequest } from '../../src/shared/rate-limiter';
import { SparePermits } from '../../src/activities/spare-permits';

const HOUR = 3_600_000;
const ask = (i: number): PermitRequest => ({ requesterWorkflowId: `job-${i}`, requestKey: `create-${i}` });

function pool(options: { windowMs?: number; idleMs?: number } = {}) {
  const released: { projectId: string; keys: string[] }[] = [];
  const spares = new SparePermits({
    windowMs: options.windowMs ?? HOUR,
    idleMs: options.idleMs ?? 60_000,
    release: (projectId, given) => released.push({ projectId, keys: given.map((g) => g.requestKey) }),
  });
  /** Grants every key asked for, with an hour to use it. */
  const grantAll = (projectId: string, keys: string[]) =>
    spares.settle(
      projectId,
      keys,
      keys.map((requestKey) => ({ requestKey, granted: true, useByMs: Date.now() + HOUR })),
    );
  return { spares, released, grantAll };
}

test('a lone ask wants no spares; a busy project wants as many as its other recent asks', async () => {
  const { spares } = pool();
  assert.equal(await spares.take('p', ask(1)), undefined);
  assert.deepEqual(spares.want('p', 1), [], 'one job now and then costs nothing extra');
  for (let i = 2; i <= 4; i++) assert.equal(await spares.take('p', ask(i)), undefined);
  assert.equal(spares.want('p', 1).length, 3);
  assert.deepEqual(spares.want('p', 1), [], 'spares asked for already are counted');
});

test("later asks are answered from the spares, under the spare's identity, once each", async () => {
  const { spares, grantAll } = pool();
  for (let i = 1; i <= 3; i++) await spares.take('p', ask(i));
  const keys = spares.want('p', 1);
  grantAll('p', keys);
  const first = await spares.take('p', ask(10));
  assert.equal(first?.requesterWorkflowId, spares.holder);
  assert.equal(first?.requestKey, keys[0]);
  assert.deepEqual(await spares.take('p', ask(10)), first, 'a repeated ask gets the same spare');
  assert.equal((await spares.take('p', ask(11)))?.requestKey, keys[1]);
  assert.equal(await spares.take('other-project', ask(12)), undefined, 'spares are per project');
});

test('an ask waits for spares already asked for, and falls back when none were granted', async () => {
  const { spares, grantAll } = pool();
  for (let i = 1; i <= 3; i++) await spares.take('p', ask(i));
  const keys = spares.want('p', 1);
  const waiting = spares.take('p', ask(20));
  grantAll('p', keys);
  assert.equal((await waiting)?.requestKey, keys[0]);

  for (let i = 21; i <= 30; i++) await spares.take('p', ask(i));
  const more = spares.want('p', 1);
  assert.ok(more.length > 0);
  const refused = spares.take('p', ask(40));
  spares.settle('p', more, []); // the limiter granted none (or the ask failed)
  assert.equal(await refused, undefined);
});

test('spares nobody takes go back to the limiter after the idle time; so do all of them at shutdown', async () => {
  const { spares, released, grantAll } = pool({ idleMs: 50 });
  for (let i = 1; i <= 3; i++) await spares.take('p', ask(i));
  const keys = spares.want('p', 1);
  grantAll('p', keys);
  await spares.take('p', ask(4));
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.deepEqual(released, [{ projectId: 'p', keys: keys.slice(1) }]);
  assert.equal(await spares.take('p', ask(5)), undefined, 'released spares are not handed out');

  const other = pool();
  for (let i = 1; i <= 3; i++) await other.spares.take('q', ask(i));
  const held = other.spares.want('q', 1);
  other.grantAll('q', held);
  other.spares.releaseAll();
  assert.deepEqual(other.released, [{ projectId: 'q', keys: held }]);
});

test('a spare with less than half a window left is given back instead of handed out', async () => {
  const { spares, released } = pool({ windowMs: 60_000 });
  for (let i = 1; i <= 3; i++) await spares.take('p', ask(i));
  const keys = spares.want('p', 1);
  spares.settle('p', keys, [
    { requestKey: keys[0]!, granted: true, useByMs: Date.now() + 10_000 },
    { requestKey: keys[1]!, granted: true, useByMs: Date.now() + 50_000 },
  ]);
  assert.equal((await spares.take('p', ask(4)))?.requestKey, keys[1]);
  assert.deepEqual(released, [{ projectId: 'p', keys: [keys[0]] }]);
});

test('short windows get no spares (they would expire on a busy worker)', async () => {
  const { spares } = pool({ windowMs: 10_000 });
  for (let i = 1; i <= 5; i++) assert.equal(await spares.take('p', ask(i)), undefined);
  assert.deepEqual(spares.want('p', 1), []);
});

test('an ask cancelled while it waits for spares takes none; they stay for the next ask', async () => {
  const { spares, grantAll } = pool();
  for (let i = 1; i <= 3; i++) await spares.take('p', ask(i));
  const keys = spares.want('p', 1);
  const abort = new AbortController();
  const cancelled = spares.take('p', ask(50), abort.signal);
  abort.abort();
  assert.equal(await cancelled, undefined, 'the cancelled ask stops waiting');
  grantAll('p', keys);
  assert.equal((await spares.take('p', ask(51)))?.requestKey, keys[0], 'the first spare went to a live ask');
  assert.equal(await spares.take('p', ask(52), AbortSignal.abort()), undefined, 'an ask cancelled already takes none');
});
