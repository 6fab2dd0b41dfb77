// test-lane: cluster
// Bundle links as an attacker would hand them out: the admin API (the emulator, its `publicUrl` turned
// against the worker, as an impersonated or compromised API would) answers with a link to the cloud
// metadata address, to a loopback port of the attacker's, or to an allowed storage host that answers
// badly. The worker (`npm run worker`, its output kept) fetches only from the admin API's host and
// BUNDLE_ALLOWED_HOSTS: the refused links reach nothing and are named, by host, in the keeper's status
// and failure; an error answer's body reaches no failure, status or log, and 40 MB of it is not read.
import assert from 'node:assert/strict';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { type EmulatorHandle, startEmulator } from '../../emulator';
import { type KeeperStatus, keeperStatusQuery } from '../../src/shared/bundle-keeper';
import { WorkflowType } from '../../src/shared/workflow-types';
import { WorkerProcess } from '../chaos/helpers';
import { type HostileServer, startHostileServer } from '../helpers/hostile-server';
import { writeSinksFile } from '../helpers/sinks';
import { createE2eEnv, terminateAll, uniqueTaskQueue, waitFor } from '../helpers/temporal';

const KEY = 'mint_attacker_downloads_key_0123456789';
const SECRET_BODY = 'postgres://app:hunter2@db/x';
const MB = 1024 * 1024;

describe('bundle links the worker must not follow or quote', () => {
  let env: TestWorkflowEnvironment;
  let emu: EmulatorHandle;
  let worker: WorkerProcess | undefined;
  let attacker: HostileServer;
  let storage: HostileServer;
  let dir: string;
  const started: string[] = [];
  const taskQueue = uniqueTaskQueue('attacker-downloads');
  const run = `${Date.now().toString(36)}-${process.pid}`;

  before(async () => {
    env = await createE2eEnv();
    emu = await startEmulator({ exportQueuedMs: 100, exportDurationMs: 300 });
    attacker = await startHostileServer({ '/': { status: 200, body: 'the attacker was reached' } });
    storage = await startHostileServer({
      '/leaky/': { status: 401, body: SECRET_BODY },
      '/huge/': { status: 500, streamBytes: 40 * MB, prefix: SECRET_BODY },
    });
    dir = await fsp.mkdtemp(path.join(tmpdir(), 'attacker-downloads-'));
    const sinksFile = await writeSinksFile(dir, {
      deploy: { type: 'file', path: path.join(dir, 'docs.json') },
      airgap: { type: 'mirror', dir: path.join(dir, 'mirror'), urlPrefix: 'https://mirror.internal/docs/' },
    });
    worker = await WorkerProcess.start({
      env: {
        TEMPORAL_ADDRESS: env.address,
        TEMPORAL_NAMESPACE: env.namespace ?? 'default',
        TEMPORAL_TASK_QUEUE: taskQueue,
        ADMIN_API_URL: emu.url,
        ADMIN_API_KEY: KEY,
        KEEPER_SINKS_FILE: sinksFile,
        // The owner's storage: allowed, and answering badly.
        BUNDLE_ALLOWED_HOSTS: new URL(storage.url).host,
      },
    });
  });

  after(async () => {
    await terminateAll(env.client, started);
    await worker?.kill();
    await attacker?.close();
    await storage?.close();
    await emu?.close();
    await env?.teardown();
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
  });

  /** A keeper of `name` through `sink` while the API hands out links on `linkBase`, until its first failure. */
  async function keepUntilFailure(name: string, sink: string, linkBase: string) {
    emu.configure({ publicUrl: linkBase });
    const workflowId = `attacker-download-${name}-${run}`;
    started.push(workflowId);
    const handle = await env.client.workflow.start(WorkflowType.bundleKeeper, {
      taskQueue,
      workflowId,
      args: [{ domain: `${name}.attacker.example.com`, sink }],
    });
    const status = await waitFor(
      async () => ((s: KeeperStatus) => (s.lastError ? s : null))(await handle.query(keeperStatusQuery)),
      { timeoutMs: 90_000, what: `the ${name} keeper's first failure` },
    );
    // Before the next scenario changes the links: no fresh link of this keeper may pick that up.
    await handle.terminate('scenario done');
    return { status, failures: await activityFailures(handle) };
  }

  test(
    'links to the metadata address and to a loopback port of the attacker are refused before any byte, named by host',
    { timeout: 240_000 },
    async () => {
      const attackerHost = new URL(attacker.url).host;
      const cases: [string, string, string, string][] = [
        ['metadata', 'deploy', 'http://169.254.169.254', '169.254.169.254'],
        ['loopback', 'deploy', attacker.url, attackerHost],
        ['loopback-mirror', 'airgap', attacker.url, attackerHost],
      ];
      for (const [name, sink, linkBase, host] of cases) {
        const { status, failures } = await keepUntilFailure(name, sink, linkBase);
        const message = `bundle link refused: host ${host} is neither the admin API's nor listed in BUNDLE_ALLOWED_HOSTS`;
        assert.ok(status.lastError!.endsWith(`not applied (previous config stays): BundleRefused: ${message}`), name);
        assert.equal(status.jobId, null, `${name}: nothing applied`);
        // One attempt, not retried, and the failure names the host only: no path, no signature.
        assert.deepEqual(failures, [{ type: 'BundleRefused', nonRetryable: true, message, attempt: 1 }], name);
      }
      assert.deepEqual(attacker.hits, [], 'the attacker saw no request');
      await assert.rejects(fsp.stat(path.join(dir, 'docs.json')), 'no deployment document written');
      assert.deepEqual(await fsp.readdir(path.join(dir, 'mirror')).catch(() => []), [], 'nothing mirrored');
    },
  );

  test(
    "an allowed host's error answer: its body reaches no failure, status or log, and 40 MB of it is not read",
    { timeout: 240_000 },
    async () => {
      const leaky = await keepUntilFailure('leaky', 'deploy', `${storage.url}/leaky`);
      assert.match(
        leaky.status.lastError!,
        /BundleUnavailable: bundle link http:\/\/127\.0\.0\.1:\d+\/leaky\/bundles\/[^?\s]+\.tar\.gz answered HTTP 401$/,
      );
      assert.deepEqual(
        leaky.failures.map((f) => [f.type, f.attempt]),
        [['BundleUnavailable', 3]],
        'a 401 of storage is retried, as before',
      );

      const huge = await keepUntilFailure('huge', 'deploy', `${storage.url}/huge`);
      const hugeHits = storage.hits.filter((url) => url.startsWith('/huge/')).length;
      assert.equal(hugeHits, 3, 'three attempts');
      await waitFor(() => storage.written.filter((w) => w.url.startsWith('/huge/')).length === hugeHits, {
        what: 'every huge answer to end',
      });
      // Kernel buffers on loopback take a few MB before the worker closes; reading it all is 40 MB each.
      for (const { bytes } of storage.written.filter((w) => w.url.startsWith('/huge/')))
        assert.ok(bytes < 16 * MB, `${bytes} bytes of a 40 MB answer written`);
      assert.match(huge.status.lastError!, /answered HTTP 500$/);

      for (const [where, text] of [
        ['the leaky status', JSON.stringify(leaky)],
        ['the huge status', JSON.stringify(huge)],
        ['the leaky history', JSON.stringify(await historyOf(`attacker-download-leaky-${run}`))],
        ['the huge history', JSON.stringify(await historyOf(`attacker-download-huge-${run}`))],
        ["the worker's output", worker!.output.text],
      ] as const)
        assert.doesNotMatch(text, /hunter2|postgres:/, `no secret in ${where}`);
    },
  );

  async function historyOf(workflowId: string) {
    return (await env.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  }

  /** Every failed activity of the run: its failure's type, nonRetryable and message, and its last attempt. */
  async function activityFailures(handle: WorkflowHandle) {
    const events = (await handle.fetchHistory()).events ?? [];
    return events.flatMap((e) => {
      const failed = e.activityTaskFailedEventAttributes;
      const info = failed?.failure?.applicationFailureInfo;
      if (!failed || !info) return [];
      const started = events.find((s) => String(s.eventId) === String(failed.startedEventId));
      return [
        {
          type: info.type,
          nonRetryable: Boolean(info.nonRetryable),
          message: failed.failure!.message,
          attempt: started?.activityTaskStartedEventAttributes?.attempt,
        },
      ];
    });
  }
});
