// test-lane: cluster
// The publish path against an attacker who holds one signed GitHub delivery (a captured body: the delivery
// id is not signed) and reaches the webhook receiver, or holds a Temporal client: a signed body replayed
// under new delivery ids, through the receiver or as plain publish signals with the body's commit, starts
// no deployment update once that commit was built (applied, superseded or failed); and unsigned requests
// are bounded: an oversized body is refused before it is read whole, and requests beyond the cap of those
// being read are turned away at once.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { type Socket, connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { publishSignal } from '../../src/shared/bundle-keeper';
import type { WebhookServer } from '../../src/webhooks/server';
import { workflowTracingSinks } from '../../src/worker';
import { writeSinksFile } from '../helpers/sinks';
import {
  type DocsAdminStack,
  createE2eEnv,
  startDocsAdminStack,
  terminateAll,
  uniqueTaskQueue,
  waitFor,
  workflowBundle,
} from '../helpers/temporal';
import { type githubSender, pushPayload, randomSha } from '../helpers/github';
import { startSignedReceiver, startSourcedKeeper } from '../helpers/publishing';

const KEY = 'mint_attacker_webhooks_key_0123';
const SECRET = 'webhook-secret-attacker';
const run = `${Date.now().toString(36)}-${process.pid}`;
const { EventType } = temporal.api.enums.v1;

/**
 * Once the keeper has handled every publish signal sent so far (a workflow task completed after the
 * last), the activities it scheduled from the `from`-th publish signal on.
 */
async function scheduledSinceSignal(handle: WorkflowHandle, from: number, signals: number): Promise<string[]> {
  return waitFor(
    async () => {
      const events = (await handle.fetchHistory()).events ?? [];
      const signalled = events.flatMap((e, i) =>
        e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED &&
        e.workflowExecutionSignaledEventAttributes?.signalName === publishSignal.name
          ? [i]
          : [],
      );
      const last = signalled[signals - 1];
      if (last === undefined) return null;
      if (!events.slice(last).some((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)) return null;
      return events
        .slice(signalled[from]!)
        .flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    },
    { timeoutMs: 30_000, what: `the keeper's workflow task after ${signals} publish signals` },
  );
}

interface RawAnswer {
  status: number | null;
  text: string;
  /** The receiver closed the connection (or reset it) before the request was sent whole. */
  cut: boolean;
}

/**
 * One request on a raw socket: `head` (request line and headers), then `body`, never ending it unless
 * `whole`. Resolves when the receiver answers and closes, or rejects after `timeoutMs`.
 */
function rawRequest(url: string, head: string, body: Buffer[], whole = false, timeoutMs = 5_000): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms (the receiver is still reading)`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      const status = /^HTTP\/1\.1 (\d{3})/.exec(received);
      resolve({ status: status ? Number(status[1]) : null, text: received.split('\r\n\r\n')[1] ?? '', cut: true });
    };
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', done);
    socket.on('close', done);
    socket.on('connect', () => {
      socket.write(head);
      for (const chunk of body) if (!socket.destroyed) socket.write(chunk);
      if (whole) socket.end();
    });
  });
}

const postHead = (headers: Record<string, string>) =>
  `POST /github HTTP/1.1\r\nhost: 127.0.0.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;

const pushHeaders = (extra: Record<string, string>) => ({
  'content-type': 'application/json',
  'x-github-event': 'push',
  'x-github-delivery': randomUUID(),
  // Any value: the receiver can only check it once it has the body.
  'x-hub-signature-256': `sha256=${'0'.repeat(64)}`,
  ...extra,
});

describe('attacker: replayed GitHub deliveries and unsigned requests', () => {
  let env: TestWorkflowEnvironment;
  let stack: DocsAdminStack | undefined;
  let receiver: WebhookServer | undefined;
  let dir: string;
  let send: Awaited<ReturnType<typeof githubSender>>;
  const keepers: string[] = [];
  const taskQueue = uniqueTaskQueue('attacker-webhooks');

  before(async () => {
    env = await createE2eEnv();
    dir = await fsp.mkdtemp(path.join(tmpdir(), 'attacker-webhooks-'));
    const sinks = Object.fromEntries(
      ['replayed', 'failed'].map((name) => [
        name,
        { type: 'file', path: path.join(dir, `${name}.json`), domains: [`atk-${name}-${run}.docs.example.com`] },
      ]),
    );
    stack = await startDocsAdminStack(
      env,
      { exportQueuedMs: 100, exportDurationMs: 500, updateQueuedMs: 100, updateBuildMs: 500 },
      { ADMIN_API_KEY: KEY, TEMPORAL_TASK_QUEUE: taskQueue, KEEPER_SINKS_FILE: await writeSinksFile(dir, sinks) },
    );
    await fsp.writeFile(path.join(dir, 'secrets'), `${SECRET}\n`, { mode: 0o600 });
    ({ receiver, send } = await startSignedReceiver(env.client, path.join(dir, 'secrets'), SECRET));
  });

  after(async () => {
    await terminateAll(env.client, keepers);
    await receiver?.close();
    await stack?.close();
    await env?.teardown();
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
  });

  /** A keeper with a source and a file sink, its first bundle applied and its memo visible. */
  async function keeperFor(name: string) {
    const keeper = await startSourcedKeeper(env.client, stack!, { name, projectId: `atk-${name}-${run}`, taskQueue });
    keepers.push(keeper.handle.workflowId);
    const { projectId, repositoryUrl, handle } = keeper;
    const updates = () => stack!.emu.updates().filter((u) => u.projectId === projectId);
    /** The publish signal a Temporal client sends with the commit of a captured body, under a new id. */
    const replaySignal = (sha: string) =>
      handle.signal(publishSignal, { repository: repositoryUrl, ref: 'main', sha, deliveryId: randomUUID() });
    return { ...keeper, updates, replaySignal };
  }

  test(
    'a signed push sent 3 times under 3 delivery ids builds once, and never again once superseded',
    { timeout: 180_000 },
    async () => {
      const k = await keeperFor('replayed');
      const a = randomSha();
      stack!.emu.push({ projectId: k.projectId, sha: a });
      const bodyA = pushPayload(k.repositoryUrl, 'main', a);
      const first = await send({ event: 'push', payload: bodyA });
      assert.match(first.text, /publish signalled to bundle-keeper:/);
      for (let i = 0; i < 2; i++) {
        const again = await send({ event: 'push', payload: bodyA });
        assert.equal(again.status, 202, again.text);
        assert.match(again.text, /^replay of a body already handled \(delivery /, 'the receiver remembers the body');
      }
      await k.applied(a);
      assert.equal(k.updates().length, 1, 'one build for one body');

      // B supersedes A; then A's body comes back, through the receiver and straight to the keeper (as after
      // a restart of the receiver, which forgets): A was built, so nothing starts.
      const b = randomSha();
      stack!.emu.push({ projectId: k.projectId, sha: b });
      assert.equal((await send({ event: 'push', payload: pushPayload(k.repositoryUrl, 'main', b) })).status, 202);
      await k.applied(b);
      const signalsBefore = 2;
      for (let i = 0; i < 3; i++) {
        const replay = await send({ event: 'push', payload: bodyA });
        assert.equal(replay.status, 202, replay.text);
        assert.doesNotMatch(replay.text, /publish signalled/);
      }
      for (let i = 0; i < 3; i++) await k.replaySignal(a);
      const scheduled = await scheduledSinceSignal(k.handle, signalsBefore, signalsBefore + 3);
      assert.deepEqual(
        scheduled.filter((type) => type === 'triggerUpdate'),
        [],
        'no update triggered by a replay',
      );
      const now = await k.status();
      assert.equal(now.publishing?.publishWanted, false);
      assert.equal(now.publishing?.commit?.sha, b, 'B stays applied');
      assert.equal(k.updates().length, 2, 'A and B, each built once');

      // Runs that accepted such a replay before keep doing so on replay (patched); this run took the check,
      // recorded it, and replays on this code.
      const history = await k.handle.fetchHistory();
      const patches = (history.events ?? []).flatMap((e) =>
        Object.values(e.markerRecordedEventAttributes?.details ?? {}).flatMap((p) =>
          (p.payloads ?? []).map((payload) => Buffer.from(payload.data ?? []).toString()),
        ),
      );
      assert.ok(
        patches.some((data) => data.includes('publish-built-commit-once')),
        `the patch marker is recorded (markers: ${patches.join(', ')})`,
      );
      await Worker.runReplayHistory(
        { workflowBundle: await workflowBundle(), sinks: workflowTracingSinks(undefined) },
        history,
        k.handle.workflowId,
      );
    },
  );

  test('a replayed push of a commit whose build failed starts no second build', { timeout: 120_000 }, async () => {
    const k = await keeperFor('failed');
    stack!.emu.configure({ failingUpdateProjects: [k.projectId] });
    const bad = randomSha();
    stack!.emu.push({ projectId: k.projectId, sha: bad });
    assert.equal((await send({ event: 'push', payload: pushPayload(k.repositoryUrl, 'main', bad) })).status, 202);
    await waitFor(async () => (await k.status()).publishing?.update?.status === 'failure', {
      timeoutMs: 30_000,
      what: 'the update failure reported',
    });
    for (let i = 0; i < 3; i++) await k.replaySignal(bad);
    const scheduled = await scheduledSinceSignal(k.handle, 1, 4);
    assert.deepEqual(
      scheduled.filter((type) => type === 'triggerUpdate'),
      [],
    );
    assert.equal(k.updates().length, 1);
    stack!.emu.configure({ failingUpdateProjects: [] });
  });

  test('an oversized unsigned body is refused before it is read whole', async () => {
    // Declared: refused on the headers, with 64 KiB of a declared 20 MiB sent.
    const declared = await rawRequest(receiver!.url, postHead(pushHeaders({ 'content-length': String(20 << 20) })), [
      Buffer.alloc(64 << 10, 0x20),
    ]);
    assert.equal(declared.status, 413, declared.text);
    assert.match(declared.text, /payload too large: over 1048576 bytes before its signature/);

    // Chunked (no length): cut off once past the cap, with 2 MiB of it sent and the rest never.
    const chunk = Buffer.alloc(64 << 10, 0x20);
    const chunks = Array.from({ length: 32 }, () =>
      Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]),
    );
    const streamed = await rawRequest(receiver!.url, postHead(pushHeaders({ 'transfer-encoding': 'chunked' })), chunks);
    assert.ok(streamed.cut, 'the receiver ended the connection');
    if (streamed.status !== null) assert.equal(streamed.status, 413, streamed.text);
  });

  test('unsigned requests beyond the cap are refused at once, and served again once the others leave', async () => {
    const ping = () => send({ event: 'ping', payload: { zen: 'Design for failure.' } });
    assert.equal((await ping()).status, 202);
    // 64 senders that send their headers and hold the body back (as a slow attacker does).
    const held: Socket[] = [];
    const { port } = new URL(receiver!.url);
    for (let i = 0; i < 64; i++) {
      const socket = connect(Number(port), '127.0.0.1');
      socket.on('error', () => undefined);
      socket.write(postHead(pushHeaders({ 'content-length': '100' })));
      held.push(socket);
    }
    try {
      let answer = await ping();
      await waitFor(async () => (answer = await ping()).status === 503, {
        timeoutMs: 8_000,
        what: () => `a delivery refused while 64 unsigned requests are held (last: ${answer.status} ${answer.text})`,
      });
      assert.match(answer.text, /^busy: 64 unverified requests in progress/);
    } finally {
      for (const socket of held) socket.destroy();
    }
    await waitFor(async () => (await ping()).status === 202, { what: 'served again' });
  });
});
