// test-lane: parallel
// The worker's Prometheus endpoint after real runs: the project's metrics agree with what the emulator
// saw (in-process worker through createDocsAdminWorker), and the real `npm run worker` process serves
// the SDK's temporal_* metrics on the same endpoint, logs JSON without the key, and drains on SIGTERM.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { runExport, startAgentJob, awaitAgentJob } from '../../src/client';
import type { WorkerConfig } from '../../src/config';
import { type EmulatorHandle, startEmulator } from '../../emulator';
import { createDocsAdminWorker, type DocsAdminWorker } from '../../src/worker';
import { createDevEnv, uniqueTaskQueue, waitFor, workflowBundle } from '../helpers/temporal';
import { bundleCacheEnv, bundleCacheNodeArgs } from '../helpers/bundle-cache';
import { freeLoopbackPort } from '../../src/observability/free-port';

const ROOT = path.resolve(__dirname, '../..');
const KEY = 'mint_metrics_test_key_0123456789';
const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;

/** `name{labels}` -> value, for every sample line of a Prometheus text exposition. */
function parseSamples(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^(\S+?(?:\{.*\})?)\s+(\S+)(?:\s+\d+)?$/.exec(line);
    if (match) samples.set(match[1] as string, Number(match[2]));
  }
  return samples;
}

const sample = (samples: Map<string, number>, key: string): number => samples.get(key) ?? 0;

async function scrape(
  url: string,
): Promise<{ text: string; samples: Map<string, number>; contentType: string | null }> {
  const response = await fetch(url);
  assert.equal(response.status, 200);
  const text = await response.text();
  return { text, samples: parseSamples(text), contentType: response.headers.get('content-type') };
}

describe('metrics endpoint', () => {
  let env: TestWorkflowEnvironment;
  let emu: EmulatorHandle;

  before(async () => {
    env = await createDevEnv();
    // A tight API rate limit (1 create per 1.5 s per project) so the second agent job meets a 429.
    emu = await startEmulator({
      agentActiveMs: 200,
      exportQueuedMs: 100,
      exportDurationMs: 1_500,
      rateLimit: { limit: 1, windowMs: 1_500 },
      retryAfterForm: 'seconds',
    });
  });

  after(async () => {
    await emu?.close();
    await env?.teardown();
  });

  test("in-process worker: the project's metrics match the emulator's counts", async () => {
    const taskQueue = uniqueTaskQueue('metrics');
    const config: WorkerConfig = {
      address: env.address,
      namespace: env.namespace ?? 'default',
      taskQueue,
      adminApiUrl: emu.url,
      adminApiKey: KEY,
      agentRateLimit: { limit: 100, windowMs: 60_000 },
      metricsPort: 0,
    };
    const worker: DocsAdminWorker = await createDocsAdminWorker(config, {
      connection: env.nativeConnection,
      client: env.client,
      workflowBundle: await workflowBundle(),
      metricsListen: { port: 0 },
    });
    try {
      void worker.run();
      assert.ok(worker.metricsUrl?.startsWith('http://127.0.0.1:'), `bound to loopback: ${worker.metricsUrl}`);
      // Two export status polls answered 503: Temporal retries each once (Retry-After 1 s).
      emu.setFaults([{ route: 'getExport', kind: '503', count: 2, retryAfterSeconds: 1 }]);
      const project = `metrics-${run}`;
      const [exported, first, second] = await Promise.all([
        runExport(env.client, { domain: `metrics-${run}.example.com` }, { taskQueue }),
        startAgentJob(env.client, { projectId: project, prompt: 'first change' }, { taskQueue }),
        startAgentJob(env.client, { projectId: project, prompt: 'second change' }, { taskQueue }),
      ]);
      await Promise.all([awaitAgentJob(env.client, first.workflowId), awaitAgentJob(env.client, second.workflowId)]);
      assert.equal(exported.pageCount > 0, true);

      const { samples, text, contentType } = await scrape(worker.metricsUrl!);
      assert.match(contentType ?? '', /^text\/plain/);
      assert.doesNotMatch(text, new RegExp(KEY), 'the key never appears in metrics');
      const calls = emu.counters().calls;
      const seen = (route: string, status: string) => calls[route]?.[status] ?? 0;

      assert.equal(sample(samples, 'docs_admin_api_calls_total{operation="startExport",status="202"}'), 1);
      assert.equal(
        sample(samples, 'docs_admin_api_calls_total{operation="getExport",status="200"}'),
        seen('getExport', '200'),
      );
      assert.equal(
        sample(samples, 'docs_admin_api_calls_total{operation="generateBundle",status="200"}'),
        seen('generateBundle', '200'),
      );
      assert.equal(sample(samples, 'docs_admin_api_calls_total{operation="createAgentJob",status="201"}'), 2);
      const limited = seen('createAgentJob', '429');
      assert.ok(limited >= 1, 'the emulator answered 429 at least once');
      assert.equal(sample(samples, 'docs_admin_api_calls_total{operation="createAgentJob",status="429"}'), limited);
      assert.equal(sample(samples, 'docs_admin_api_rate_limited_total{operation="createAgentJob"}'), limited);
      // Each 503 made Temporal retry the poll activity once, and each retry is counted exactly once.
      assert.equal(seen('getExport', '503'), 2);
      assert.equal(sample(samples, 'docs_admin_api_calls_total{operation="getExport",status="503"}'), 2);
      assert.equal(sample(samples, 'docs_admin_activity_retries_total{activity_type="getExportStatus"}'), 2);
      // A 429 on create is retried by the agentJob workflow itself (one attempt per create activity,
      // so that a create is never re-sent by Temporal): no activity retry to count there.
      assert.equal(sample(samples, 'docs_admin_activity_retries_total{activity_type="createAgentJob"}'), 0);
      // Every poll attempt counts, answered or not.
      assert.equal(
        sample(samples, 'docs_admin_polls_total{kind="export"}'),
        seen('getExport', '200') + seen('getExport', '503'),
      );
      assert.equal(sample(samples, 'docs_admin_polls_total{kind="agent"}'), seen('getAgentJob', '200'));
      assert.ok(sample(samples, 'docs_admin_api_call_duration_seconds_count{operation="startExport"}') === 1);
      assert.ok(sample(samples, 'process_resident_memory_bytes') > 0, 'Node process metrics are there too');
    } finally {
      emu.setFaults([]);
      await worker.close();
    }
    await assert.rejects(fetch(worker.metricsUrl!), 'the endpoint is closed with the worker');
  });

  describe('`npm run worker` as a process', () => {
    let child: ChildProcess;
    let stderr = '';
    let exited: Promise<number | null>;
    let metricsPort: number;
    const taskQueue = uniqueTaskQueue('metrics-proc');

    before(async () => {
      metricsPort = await freeLoopbackPort();
      child = spawn(process.execPath, ['--import', 'tsx', ...bundleCacheNodeArgs(), 'src/worker.ts'], {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          ...bundleCacheEnv(),
          ADMIN_API_URL: emu.url,
          ADMIN_API_KEY: KEY,
          TEMPORAL_ADDRESS: env.address,
          TEMPORAL_NAMESPACE: env.namespace ?? 'default',
          TEMPORAL_TASK_QUEUE: taskQueue,
          METRICS_PORT: String(metricsPort),
          LOG_FORMAT: 'json',
          SHUTDOWN_GRACE_TIME: '5s',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
      await waitFor(() => stderr.includes('docs-admin worker started') || child.exitCode !== null, {
        timeoutMs: 40_000,
        intervalMs: 100,
        what: 'the worker to start',
      });
      assert.equal(child.exitCode, null, `the worker exited early:\n${stderr}`);
    });

    after(async () => {
      if (child && child.exitCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    });

    test('one endpoint serves the SDK temporal_* metrics and the project metrics', async () => {
      const result = await runExport(env.client, { domain: `proc-${run}.example.com` }, { taskQueue });
      assert.ok(result.bundleUrl.startsWith(emu.url));
      const url = `http://127.0.0.1:${metricsPort}/metrics`;
      // Core exports on its own schedule: wait until the completed workflow shows up.
      const { samples, text } = await waitFor(
        async () => {
          const scraped = await scrape(url);
          const completed = [...scraped.samples].some(
            ([k, v]) => k.startsWith('temporal_workflow_completed') && v >= 1,
          );
          return completed ? scraped : null;
        },
        { timeoutMs: 20_000, intervalMs: 250, what: 'temporal_workflow_completed in the scrape' },
      );
      assert.ok(
        // An export's calls are local activities.
        [...samples.keys()].some((k) => k.startsWith('temporal_local_activity_execution_latency')),
        'SDK (local) activity metrics',
      );
      assert.equal(sample(samples, 'docs_admin_api_calls_total{operation="startExport",status="202"}'), 1);
      assert.ok(sample(samples, 'docs_admin_polls_total{kind="export"}') >= 1);
      assert.equal(sample(samples, 'docs_admin_sdk_metrics_up'), 1);
      assert.ok(!text.includes(KEY));
      // Bound to loopback only.
      assert.equal((await fetch(`http://127.0.0.1:${metricsPort}/nope`)).status, 404);
    });

    test('JSON log lines without the key; SIGTERM drains and exits 0', async () => {
      child.kill('SIGTERM');
      const code = await Promise.race([
        exited,
        new Promise<string>((resolve) => setTimeout(() => resolve('timeout'), 20_000)),
      ]);
      assert.equal(code, 0, `exit code (stderr:\n${stderr})`);
      const lines = stderr.split('\n').filter((l) => l.trim() !== '');
      assert.ok(lines.length >= 2);
      for (const line of lines) {
        const entry = JSON.parse(line) as { level: string; msg: string; time: string };
        assert.ok(entry.level && entry.msg && entry.time, line);
      }
      assert.ok(lines.some((l) => l.includes('docs-admin worker stopped')));
      assert.ok(!stderr.includes(KEY), 'the key never appears in the logs');
    });
  });
});
