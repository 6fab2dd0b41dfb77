// Fault injection at the API: 10 % 5xx, 5 % connection resets, 5 % slow beyond the client timeout and
// 2 % non-JSON bodies, all at once, on every route including bundle downloads.
//   - Exports all complete (their ambiguous failures are retryable).
//   - Agent jobs: the idempotency policy fails a create whose outcome is unknown with OutcomeUnknown
//     rather than risk a second pull request. So each agent workflow either completes with exactly one
//     job, or fails with OutcomeUnknown and the emulator holds at most one job for its prompt. No
//     duplicates, and no failure of any other type (nothing fails on a retryable fault).
//   - A bundle keeper with a file sink, refreshing every few seconds through download faults, never
//     applies a link that does not download.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ensureKeeper, publish } from '../../src/client';
import { startEmulator, type EmulatorHandle } from '../../emulator';
import { keeperStatusQuery } from '../../src/shared';
import { appliedUrl, faultMix, linkDownloads, startInProcessWorker, type InProcessWorker } from './faults';
import { DevServer, checkOutcomes, scanForSecret, secretKey, settle, startLifecycles, until } from './helpers';

const LIFECYCLES = Number(process.env.CHAOS_FAULT_LIFECYCLES || 120);

let dir: string;
let server: DevServer;
let emulator: EmulatorHandle;
let worker: InProcessWorker | undefined;

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'docs-admin-faults-'));
  server = await DevServer.start();
  emulator = await startEmulator({
    agentActiveMs: 2_000,
    exportQueuedMs: 300,
    exportDurationMs: 2_000,
    bundleTtlMs: 12_000,
    rateLimit: { limit: 100_000, windowMs: 3_600_000 },
  });
});

after(async () => {
  await worker?.close();
  await emulator?.close();
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test(`fault mix on every route, ${LIFECYCLES} lifecycles and a keeper: nothing lost, no duplicate, no broken link applied`, { timeout: 600_000 }, async () => {
  const key = secretKey('chaosfaults');
  const taskQueue = `chaos-faults-${Date.now()}`;
  worker = await startInProcessWorker({ address: server.address, taskQueue, emulator, key });
  const { client } = worker;
  emulator.setFaults(faultMix(), 7);

  // The keeper: file sink, links of 12 s refreshed at half their lifetime, two publishes on the way.
  const domain = 'keeper-faults.docs.example.com';
  const configFile = path.join(dir, 'deployment.json');
  const keeper = await ensureKeeper(
    client,
    { domain, sink: { type: 'file', path: configFile }, refreshMargin: { fraction: 0.5, minMs: 1_000 } },
    { taskQueue },
  );
  const applied: { url: string; downloads: boolean }[] = [];
  let watching = true;
  const watcher = (async () => {
    let last: string | undefined;
    while (watching) {
      const url = await appliedUrl(configFile);
      if (url && url !== last) {
        last = url;
        applied.push({ url, downloads: await linkDownloads(url) });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();

  const half = Math.floor(LIFECYCLES / 2);
  const lifecycles = await startLifecycles(client, taskQueue, { exports: half, agents: LIFECYCLES - half, tag: 'faults' });
  await until(() => applied.length >= 1, 'the keeper to apply a first bundle', 120_000);
  await publish(client, domain);
  const settled = await settle(client, [...lifecycles.exportIds, ...lifecycles.agents.map((a) => a.workflowId)]);
  await publish(client, domain);
  await until(() => applied.length >= 4, 'the keeper to apply four bundles (exports and refreshes)', 120_000);
  watching = false;
  await watcher;
  const status = await keeper.query(keeperStatusQuery);
  await keeper.terminate('chaos test done');

  const outcome = checkOutcomes(lifecycles, settled, emulator.jobs(), { allowOutcomeUnknown: true });
  const counters = emulator.counters();
  console.log(
    `faults injected: ${JSON.stringify(counters.faultsInjected)}; exports ${outcome.exportsCompleted}/${half} completed; agent jobs ` +
      `${outcome.agentsCompleted} completed, ${outcome.agentsOutcomeUnknown} OutcomeUnknown (of ${LIFECYCLES - half}), ${outcome.duplicates} duplicates; ` +
      `keeper applied ${applied.length} links (${status.exportsDone} exports, ${status.refreshesDone} refreshes), ` +
      `${applied.filter((a) => !a.downloads).length} did not download; bundle downloads ok ${counters.downloadsOk}, denied ${counters.downloadsDenied}`,
  );
  const totalFaults = Object.values(counters.faultsInjected).reduce((a, b) => a + b, 0);
  assert.ok(totalFaults >= 20, `faults were injected (${totalFaults})`);
  assert.deepEqual(outcome.problems, [], 'every export completes; agent workflows complete or fail only with OutcomeUnknown');
  assert.equal(outcome.duplicates, 0);
  assert.equal(outcome.exportsCompleted, half);
  assert.equal(outcome.agentsCompleted + outcome.agentsOutcomeUnknown, LIFECYCLES - half);
  assert.ok(outcome.agentsCompleted > 0, 'most agent jobs complete');
  assert.deepEqual(applied.filter((a) => !a.downloads), [], 'every applied link downloads');

  emulator.setFaults([]);
  const scan = await scanForSecret({ key, client, server, taskQueues: [taskQueue], logs: { 'worker log': worker.logs.join('') } });
  assert.deepEqual(scan.found, [], 'the API key appears nowhere');
});
