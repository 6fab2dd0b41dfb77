// test-lane: cluster
// staticExport and bundleKeeper end to end: the production-shaped cluster with its default settings (a
// dev server when DOCS_ADMIN_SKIP_CLUSTER=1 or E2E_SERVER=dev-server), a real worker with the real
// activities, the admin API emulator over HTTP, real files, a loopback static server for the mirror.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { request } from 'undici';
import { createActivities } from '../../src/activities';
import { SinksFile } from '../../src/activities/sinks-file';
import { AdminApiClient } from '../../src/api/client';
import type { AdminApi } from '../../src/api/types';
import { type EmulatorHandle, startEmulator } from '../../emulator';
import { noopMetrics } from '../../src/observability/metrics';
import { bundleHostRules } from '../../src/policies/bundle-hosts';
import {
  type BundleKeeperInput,
  type KeeperStatus,
  keeperStatusQuery,
  keeperWorkflowId,
} from '../../src/shared/bundle-keeper';
import { SearchAttr } from '../../src/shared/search-attributes';
import { exportStatusQuery } from '../../src/shared/static-export';
import { bundleKeeper, staticExport } from '../../src/workflows';
import {
  type StartedWorker,
  createE2eEnv,
  startWorker,
  uniqueTaskQueue,
  waitFor,
  workflowBundle,
} from '../helpers/temporal';
import { writeSinksFile } from '../helpers/sinks';
import { failureOf } from '../helpers/failures';
import { workflowTracingSinks } from '../../src/worker/tracing';

const KEY = 'mint_export_e2e_key_0123456789';
const NOPLAN_KEY = 'mint_no_enterprise_plan_0123456';
/** Bundle links live this long in the emulator: the keeper refreshes them at half-life. */
const LINK_TTL_MS = 8_000;

/** GETs a URL in full: status, bytes. */
async function download(url: string): Promise<{ status: number; body: Buffer }> {
  const res = await request(url);
  const body = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, body };
}

function isGzip(body: Buffer): boolean {
  return body.length > 2 && body[0] === 0x1f && body[1] === 0x8b;
}

/** A static file server over a directory (what serves the mirror inside an air-gapped network). */
async function serveDir(dir: string): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const name = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).replace(/^\/+/, '');
    if (name.includes('/') || name.startsWith('.')) return void res.writeHead(404).end();
    fsp.readFile(path.join(dir, name)).then(
      (data) => res.writeHead(200).end(data),
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** The activity type of a local activity's marker event (Core records it in the marker's details). */
function localActivityType(event: temporal.api.history.v1.IHistoryEvent): string | undefined {
  const marker = event.markerRecordedEventAttributes;
  const data = marker?.markerName === 'core_local_activity' ? marker.details?.data?.payloads?.[0]?.data : undefined;
  return data ? (JSON.parse(Buffer.from(data).toString()) as { activity_type?: string }).activity_type : undefined;
}

describe('static export against the emulator', () => {
  let env: TestWorkflowEnvironment;
  let emu: EmulatorHandle;
  let worker: StartedWorker | undefined;
  let taskQueue: string;
  let dir: string;
  let mirror: { url: string; server: Server };
  const clients: AdminApiClient[] = [];
  const keepers: WorkflowHandle[] = [];

  const startCalls = (): number => Object.values(emu.counters().calls.startExport ?? {}).reduce((a, b) => a + b, 0);

  async function startKeeper(input: BundleKeeperInput) {
    const options = {
      taskQueue,
      workflowId: `${keeperWorkflowId(input.domain)}:${taskQueue}`,
      args: [input] as [BundleKeeperInput],
      workflowIdConflictPolicy: 'USE_EXISTING' as const,
    };
    const handle = await env.client.workflow.start(bundleKeeper, options);
    keepers.push(handle);
    return handle;
  }

  const keeperStatus = (handle: WorkflowHandle): Promise<KeeperStatus> => handle.query(keeperStatusQuery);

  before(async () => {
    env = await createE2eEnv();
    emu = await startEmulator({
      exportQueuedMs: 300,
      exportDurationMs: 2_500,
      bundleTtlMs: LINK_TTL_MS,
      nonEnterpriseKeys: [NOPLAN_KEY],
    });
    const good = new AdminApiClient({ baseUrl: emu.url, apiKey: KEY });
    const noPlan = new AdminApiClient({ baseUrl: emu.url, apiKey: NOPLAN_KEY });
    clients.push(good, noPlan);
    // Domains starting "noplan-" are exported with a key whose plan has no static export.
    const api: AdminApi = {
      createAgentJob: (...args) => good.createAgentJob(...args),
      getAgentJob: (...args) => good.getAgentJob(...args),
      sendAgentMessage: (...args) => good.sendAgentMessage(...args),
      startExport: (req, o) => (req.domain.startsWith('noplan-') ? noPlan : good).startExport(req, o),
      getExport: (...args) => good.getExport(...args),
      generateBundle: (...args) => good.generateBundle(...args),
      triggerUpdate: (...args) => good.triggerUpdate(...args),
      getUpdateStatus: (...args) => good.getUpdateStatus(...args),
    };
    dir = await fsp.mkdtemp(path.join(tmpdir(), 'export-e2e-'));
    mirror = await serveDir(path.join(dir, 'mirror'));
    await fsp.mkdir(path.join(dir, 'mirror'));
    taskQueue = uniqueTaskQueue('export-e2e');
    const sinksFile = await writeSinksFile(dir, {
      'deploy-file': { type: 'file', path: path.join(dir, 'deploy', 'docs.json'), domains: ['keeper.example.com'] },
      'airgap-mirror': {
        type: 'mirror',
        dir: path.join(dir, 'mirror'),
        urlPrefix: `${mirror.url}/`,
        mode: '0644',
        domains: ['airgap.example.com'],
      },
    });
    worker = await startWorker(env, {
      taskQueue,
      activities: createActivities({
        api,
        metrics: noopMetrics,
        temporal: env.client,
        agentRateLimit: { limit: 100, windowMs: 10_000 },
        sinks: new SinksFile(sinksFile),
        bundleHosts: bundleHostRules(emu.url, []),
      }),
    });
  });

  after(async () => {
    await Promise.all(keepers.map((h) => h.terminate('test finished').catch(() => undefined)));
    await worker?.stop();
    await Promise.all(clients.map((c) => c.close()));
    await emu?.close();
    await new Promise<void>((resolve) => (mirror ? mirror.server.close(() => resolve()) : resolve()));
    await env?.teardown();
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
  });

  test('staticExport returns a bundle whose link downloads a real archive; history events per poll', async () => {
    emu.configure({ exportDurationMs: 10_000 }); // long enough for several polls
    const handle = await env.client.workflow.start(staticExport, {
      taskQueue,
      workflowId: `export-e2e-${taskQueue}`,
      args: [{ domain: 'docs.example.com', version: 'v1' }],
    });
    const result = await handle.result().finally(() => emu.configure({ exportDurationMs: 2_500 }));
    assert.equal(result.domain, 'docs.example.com');
    assert.match(result.jobId, /\S/);
    assert.ok(result.pageCount > 0);
    assert.ok(Date.parse(result.expiresAt) > Date.now());
    const { status, body } = await download(result.bundleUrl);
    assert.equal(status, 200);
    assert.equal(body.length, result.sizeBytes);
    assert.ok(isGzip(body), 'gzip magic');

    const exportStatus = await handle.query(exportStatusQuery);
    assert.equal(exportStatus.phase, 'done');
    assert.equal(exportStatus.status, 'completed');
    assert.ok(exportStatus.polls >= 1);
    const description = await handle.describe();
    assert.equal(description.typedSearchAttributes.get(SearchAttr.domain), 'docs.example.com');
    assert.equal(description.typedSearchAttributes.get(SearchAttr.jobId), result.jobId);
    assert.equal(description.typedSearchAttributes.get(SearchAttr.jobStatus), 'completed');

    // History cost of polling: events from the first poll timer to the generateBundle call, per poll.
    const events = (await handle.fetchHistory()).events ?? [];
    const firstTimer = events.findIndex((e) => e.timerStartedEventAttributes);
    const bundleAt = events.findIndex((e) => localActivityType(e) === 'generateBundle');
    // Every call is a local activity: no activity task at all.
    assert.equal(events.filter((e) => e.activityTaskScheduledEventAttributes).length, 0);
    assert.equal(events.filter((e) => localActivityType(e) === 'startExport').length, 1);
    assert.ok(firstTimer > 0 && bundleAt > firstTimer, `timer at ${firstTimer}, generateBundle at ${bundleAt}`);
    const perPoll = (bundleAt - firstTimer) / exportStatus.polls;
    const upserts = events.filter((e) => e.upsertWorkflowSearchAttributesEventAttributes).length;
    console.log(
      `staticExport: ${exportStatus.polls} polls, ${events.length} history events in all, ${perPoll.toFixed(1)} events per poll ` +
        `(${upserts} search-attribute upserts, one per status change)`,
    );
    assert.ok(perPoll >= 5 && perPoll <= 8, `${perPoll} events per poll`);
    await Worker.runReplayHistory(
      { workflowBundle: await workflowBundle(), sinks: workflowTracingSinks(undefined) },
      await handle.fetchHistory(),
      handle.workflowId,
    );
  });

  test('a keeper with the file sink writes a config whose link downloads, refreshes it before expiry, and attaches on a second start', async () => {
    const file = path.join(dir, 'deploy', 'docs.json');
    const input: BundleKeeperInput = { domain: 'keeper.example.com', sink: 'deploy-file' };
    const handle = await startKeeper(input);
    const first = await waitFor(
      async () => {
        const s = await keeperStatus(handle);
        return s.jobId ? s : null;
      },
      { timeoutMs: 30_000, what: 'first bundle applied' },
    );
    const doc = JSON.parse(await fsp.readFile(file, 'utf8'));
    assert.deepEqual(Object.keys(doc.staticExport).sort(), ['bundleUrl', 'enabled']);
    assert.equal(doc.staticExport.enabled, true);
    assert.equal(doc.staticExport.bundleUrl, first.bundleUrl);
    const got = await download(doc.staticExport.bundleUrl);
    assert.equal(got.status, 200);
    assert.ok(isGzip(got.body));

    // Starting it again attaches to the running keeper.
    const again = await startKeeper(input);
    assert.equal(again.firstExecutionRunId, handle.firstExecutionRunId);

    // Links live 8 s: the keeper refreshes at half-life, and the file always holds a link that works.
    const refreshed = await waitFor(
      async () => {
        const s = await keeperStatus(handle);
        return s.refreshesDone >= 2 ? s : null;
      },
      { timeoutMs: 30_000, what: 'two refreshes' },
    );
    const doc2 = JSON.parse(await fsp.readFile(file, 'utf8'));
    assert.notEqual(doc2.staticExport.bundleUrl, doc.staticExport.bundleUrl);
    assert.equal((await download(doc2.staticExport.bundleUrl)).status, 200);
    assert.equal(refreshed.exportsDone, 1, 'refreshes are not new exports');
    const description = await handle.describe();
    assert.equal(description.typedSearchAttributes.get(SearchAttr.domain), 'keeper.example.com');
    assert.equal(description.typedSearchAttributes.get(SearchAttr.jobId), refreshed.jobId);
    assert.equal(emu.counters().downloadsDenied, 0, 'no expired link was ever fetched');

    // History cost of one refresh cycle: events between two consecutive refresh generateBundle calls.
    const history = await handle.fetchHistory();
    const events = history.events ?? [];
    const generates = events.flatMap((e, i) =>
      e.activityTaskScheduledEventAttributes?.activityType?.name === 'generateBundle' ? [i] : [],
    );
    assert.ok(generates.length >= 2);
    const perRefresh = generates[generates.length - 1]! - generates[generates.length - 2]!;
    console.log(`bundleKeeper: ${perRefresh} history events per refresh cycle (timer, generate, verify, apply)`);
    assert.ok(perRefresh >= 15 && perRefresh <= 30, `${perRefresh} events per refresh`);
    // The keeper's code replays deterministically against its own history.
    await Worker.runReplayHistory(
      { workflowBundle: await workflowBundle(), sinks: workflowTracingSinks(undefined) },
      history,
      handle.workflowId,
    );
  });

  test('the mirror sink copies a checksummed archive and points the deployment at its stable URL', async () => {
    const mirrorDir = path.join(dir, 'mirror');
    const handle = await startKeeper({
      domain: 'airgap.example.com',
      kind: 'air-gapped',
      features: { apiPlayground: true },
      sink: 'airgap-mirror',
    });
    const s = await waitFor(
      async () => {
        const st = await keeperStatus(handle);
        return st.jobId ? st : null;
      },
      { timeoutMs: 30_000, what: 'bundle mirrored' },
    );
    assert.equal(s.expiresAt, null, 'the mirrored URL does not expire');
    assert.equal(s.nextRefreshAt, null);
    assert.ok(s.bundleUrl!.startsWith(`${mirror.url}/`));
    const doc = JSON.parse(await fsp.readFile(path.join(mirrorDir, 'staticExport.json'), 'utf8'));
    assert.equal(doc.staticExport.bundleUrl, s.bundleUrl);
    const got = await download(s.bundleUrl!);
    assert.equal(got.status, 200);
    assert.ok(isGzip(got.body));
    const name = decodeURIComponent(new URL(s.bundleUrl!).pathname.slice(1));
    const recorded = (await fsp.readFile(path.join(mirrorDir, `${name}.sha256`), 'utf8')).split(/\s+/)[0];
    assert.equal(createHash('sha256').update(got.body).digest('hex'), recorded);
  });

  test('a failing export fails with ExportFailed and the job id', async () => {
    const failure = await failureOf(
      env.client.workflow.execute(staticExport, {
        taskQueue,
        workflowId: `export-fail-${taskQueue}`,
        args: [{ domain: 'fail-docs.example.com' }],
      }),
    );
    assert.equal(failure.type, 'ExportFailed');
    assert.equal(failure.nonRetryable, true);
    const details = failure.details?.[0] as { jobId: string; error: string };
    assert.match(details.jobId, /\S/);
    assert.match(failure.message, new RegExp(`${details.jobId}.*render failed`));
  });

  test('a key without the Enterprise plan fails with PlanRequired after exactly one start call', async () => {
    const before = startCalls();
    const failure = await failureOf(
      env.client.workflow.execute(staticExport, {
        taskQueue,
        workflowId: `export-noplan-${taskQueue}`,
        args: [{ domain: 'noplan-docs.example.com' }],
      }),
    );
    assert.equal(failure.type, 'PlanRequired');
    assert.match(failure.message, /needs an Enterprise plan/);
    assert.equal(startCalls() - before, 1);
    assert.equal(emu.counters().calls.startExport?.['403'], 1);
  });
});
