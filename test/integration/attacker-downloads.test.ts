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
      deploy: {
        type: 'file',
        path: path.join(dir, 'docs.json'),
        domains: ['metadata', 'loopback', 'leaky', 'huge'].map((name) => `${name}.attacker.example.com`),
      },
      airgap: {
        type: 'mirror',
        dir: path.join(dir, 'mirror'),
        urlPrefix: 'https://mirror.internal/docs/',
        domains: ['loopback-mirror.attacker.example.com'],
      },
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

  /** A keeper whose links are on `host`: refused at once (one attempt), named by host only, nothing applied. */
  async function expectRefused(name: string, sink: string, linkBase: string, host: string): Promise<void> {
    const { status, failures } = await keepUntilFailure(name, sink, linkBase);
    const message = `bundle link refused: host ${host} is neither the admin API's nor listed in BUNDLE_ALLOWED_HOSTS`;
    assert.equal(status.lastError?.split('not applied (previous config stays): ')[1], `BundleRefused: ${message}`);
    assert.equal(status.jobId, null, 'nothing applied');
    // One attempt, not retried, and the failure names the host only: no path, no signature.
    assert.deepEqual(failures, [{ type: 'BundleRefused', nonRetryable: true, message, attempt: 1 }]);
    await assert.rejects(fsp.stat(path.join(dir, 'docs.json')), 'no deployment document written');
    assert.deepEqual(await fsp.readdir(path.join(dir, 'mirror')).catch(() => []), [], 'nothing mirrored');
  }

  test('a link to the cloud metadata address is refused before any connection, named by its host', async () => {
    await expectRefused('metadata', 'deploy', 'http://169.254.169.254', '169.254.169.254');
  });

  test("a link to a loopback port of the attacker's (not the admin API's) is refused: the attacker sees nothing", async () => {
    await expectRefused('loopback', 'deploy', attacker.url, new URL(attacker.url).host);
    assert.deepEqual(attacker.hits, [], 'the attacker saw no request');
  });

  test('the mirror sink, which downloads the archive itself, refuses the same link', async () => {
    await expectRefused('loopback-mirror', 'airgap', attacker.url, new URL(attacker.url).host);
    assert.deepEqual(attacker.hits, [], 'the attacker saw no request');
  });

  test("an allowed host's 401 whose body holds a database password: it reaches no log, history or status", async () => {
    const leaky = await keepUntilFailure('leaky', 'deploy', `${storage.url}/leaky`);
    for (const [where, text] of [
      ["the worker's output", worker!.output.text],
      ['the history', JSON.stringify(await historyOf(`attacker-download-leaky-${run}`))],
      ['the status and failures', JSON.stringify(leaky)],
    ] as const)
      assert.doesNotMatch(text, /hunter2|postgres:/, `no secret in ${where}`);
    assert.match(
      leaky.status.lastError!,
      /BundleUnavailable: bundle link http:\/\/127\.0\.0\.1:\d+\/leaky\/bundles\/[^?\s]+\.tar\.gz answered HTTP 401$/,
    );
    assert.deepEqual(
      leaky.failures.map((f) => [f.type, f.attempt]),
      [['BundleUnavailable', 3]],
      'a 401 of storage is retried, as before',
    );
  });

  test("an allowed host's 40 MB error answer is read to a few KB, never whole", async () => {
    const huge = await keepUntilFailure('huge', 'deploy', `${storage.url}/huge`);
    const answers = () => storage.written.filter((w) => w.url.startsWith('/huge/'));
    const hits = storage.hits.filter((url) => url.startsWith('/huge/')).length;
    assert.equal(hits, 3, 'three attempts');
    await waitFor(() => answers().length === hits, { what: 'every huge answer to end' });
    // Kernel buffers on loopback take a few MB before the worker closes; reading it all is 40 MB each.
    for (const { bytes } of answers()) assert.ok(bytes < 16 * MB, `${bytes} bytes of a 40 MB answer written`);
    assert.match(huge.status.lastError!, /answered HTTP 500$/);
    assert.doesNotMatch(JSON.stringify(huge), /hunter2|postgres:/);
  });

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
