// test-lane: parallel
// A keeper of the release before named sinks, across the upgrade: started by that release's workflow code
// (test/replay/fixtures/keeper-inline-sink) with an inline file sink, it applies through today's
// activities only while the worker's sinks file holds an equal sink; the sink leaves the file, a publish's
// bundle is refused and the applied one stays; a cacheless worker with today's code takes over without
// nondeterminism, shows the refusal in the status, and applies once the file holds the sink again.
import assert from 'node:assert/strict';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { temporal } from '@temporalio/proto';
import { createActivities } from '../../src/activities';
import { SinksFile } from '../../src/activities/sinks-file';
import { AdminApiClient } from '../../src/api/client';
import { type EmulatorHandle, startEmulator } from '../../emulator';
import { noopMetrics } from '../../src/observability/metrics';
import { bundleHostRules } from '../../src/policies/bundle-hosts';
import { type KeeperStatus, keeperStatusQuery, publishSignal } from '../../src/shared/bundle-keeper';
import { WorkflowType } from '../../src/shared/workflow-types';
import { appliedBundleUrl, writeSinksFile } from '../helpers/sinks';
import { type DevEnv, createDevEnv, startWorker, uniqueTaskQueue, waitFor } from '../helpers/temporal';

const { EventType } = temporal.api.enums.v1;
const PREVIOUS_RELEASE = path.resolve(__dirname, '../replay/fixtures/keeper-inline-sink');

let env: DevEnv;
let emu: EmulatorHandle;
let api: AdminApiClient;
let dir: string;

before(async () => {
  env = await createDevEnv();
  emu = await startEmulator({ exportQueuedMs: 100, exportDurationMs: 300, bundleTtlMs: 10 * 60_000 });
  api = new AdminApiClient({ baseUrl: emu.url, apiKey: 'mint_keeper_upgrade_key_0123456789' });
  dir = await fsp.mkdtemp(path.join(tmpdir(), 'keeper-upgrade-'));
});
after(async () => {
  await api?.close();
  await emu?.close();
  await env?.teardown();
  if (dir) await fsp.rm(dir, { recursive: true, force: true });
});

test('an inline sink of the previous release goes on only as an equal sink of the file; nothing applied is lost', async () => {
  const taskQueue = uniqueTaskQueue('keeper-upgrade');
  const config = path.join(dir, 'docs.json');
  const held = { 'legacy-config': { type: 'file', path: config, domains: ['upgrade.example.com'] } };
  const sinksFile = await writeSinksFile(dir, held);
  const activities = createActivities({
    api,
    metrics: noopMetrics,
    temporal: env.client,
    agentRateLimit: { limit: 100, windowMs: 10_000 },
    sinks: new SinksFile(sinksFile),
    bundleHosts: bundleHostRules(emu.url, []),
  });
  const status = (): Promise<KeeperStatus> => handle.query(keeperStatusQuery);
  const until = (what: string, ok: (s: KeeperStatus) => boolean) =>
    waitFor(async () => ((s) => (ok(s) ? s : null))(await status()), { timeoutMs: 60_000, what });

  const old = await startWorker(env, { taskQueue, workflowsPath: PREVIOUS_RELEASE, activities });
  const handle = await env.client.workflow.start(WorkflowType.bundleKeeper, {
    taskQueue,
    workflowId: `bundle-keeper:upgrade.example.com:${taskQueue}`,
    args: [{ domain: 'upgrade.example.com', sink: { type: 'file', path: config } }],
  });
  let first: KeeperStatus;
  try {
    first = await until('the first apply through the equal sink', (s) => s.jobId !== null);
    assert.equal(await appliedBundleUrl(config), first.bundleUrl);
    // The owner drops the sink; a publish's bundle is refused, the applied one stays.
    await writeSinksFile(dir, {});
    await handle.signal(publishSignal);
    const refused = await until('the refused apply', (s) => /not in the worker's sinks file/.test(s.lastError ?? ''));
    assert.equal(refused.jobId, first.jobId, 'what was applied stays');
  } finally {
    await old.stop();
  }

  const today = await startWorker(env, { taskQueue, activities, maxCachedWorkflows: 0 });
  try {
    const waiting = await status();
    assert.match(waiting.sinkRefused!, /inline file sink of an earlier release .* add a file sink with the same path/);
    assert.equal(waiting.jobId, first.jobId);
    await writeSinksFile(dir, held);
    const resumed = await until('the apply once the file holds the sink again', (s) => s.jobId !== first.jobId);
    assert.equal(resumed.sinkRefused, null);
    assert.equal(await appliedBundleUrl(config), resumed.bundleUrl);
    const events = (await handle.fetchHistory()).events ?? [];
    assert.equal(
      events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED).length,
      0,
      'no workflow task failed (nondeterminism) on the new code',
    );
    await handle.terminate('test done');
  } finally {
    await today.stop();
  }
});
