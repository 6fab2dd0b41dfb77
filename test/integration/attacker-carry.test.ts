// test-lane: cluster
// The attacker's view of carried state: only a Temporal client, starting each workflow type by type name
// with plain JSON that holds a carry of its choosing (the state a run hands to the next when it continues
// as new). A keeper told that its sink is resolved and a bundle of the attacker's is pending, an export
// told to go on with another domain's job, an agent job told its job exists, a limiter handed grants and
// a queue: each fails InvalidInput, non-retryable, before any call (the emulator counts none), nothing
// reaches the deployment's file and the attacker's archive server is never asked. A workflow retry policy
// does not help either: the retried run continues from the first, but as attempt 2 with its starter's input.
import assert from 'node:assert/strict';
import * as fsp from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { EmulatorHandle } from '../../emulator';
import { AdminApiClient } from '../../src/api/client';
import type { BundleKeeperCarry } from '../../src/shared/bundle-keeper';
import { LIMITER_TASK_QUEUE, type RateLimiterCarry, rateLimiterWorkflowId } from '../../src/shared/rate-limiter';
import { WorkflowType } from '../../src/shared/workflow-types';
import { failureOf } from '../helpers/failures';
import { writeSinksFile } from '../helpers/sinks';
import {
  type DocsAdminStack,
  createE2eEnv,
  startDocsAdminStack,
  startDocsAdminWorker,
  terminateAll,
  uniqueTaskQueue,
  waitFor,
} from '../helpers/temporal';

const KEY = 'mint_attacker_carry_key_0123456789';
/** What the deployment's config says before the attacks; it must say it after them. */
const LIVE_CONFIG = `${JSON.stringify({ staticExport: { enabled: true, bundleUrl: 'https://bundles.example/live.tar.gz' } })}\n`;

/** The attacker's loopback server: a valid .tar.gz (an empty tar) for any path, and a count of the requests. */
async function startArchiveServer(): Promise<{
  url: string;
  sizeBytes: number;
  hits: () => number;
  close(): Promise<void>;
}> {
  const archive = gzipSync(Buffer.alloc(1024));
  let hits = 0;
  const server = createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'application/gzip', 'content-length': archive.length }).end(archive);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sizeBytes: archive.length,
    hits: () => hits,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('forged carry on each workflow type', () => {
  let env: TestWorkflowEnvironment;
  let stack: DocsAdminStack | undefined;
  let emu: EmulatorHandle;
  let api: AdminApiClient;
  let attacker: Awaited<ReturnType<typeof startArchiveServer>>;
  let dir: string;
  let config: string;
  let sinksFile: string;
  const started: string[] = [];
  const taskQueue = uniqueTaskQueue('attacker-carry');
  const run = `${Date.now().toString(36)}-${process.pid}`;

  before(async () => {
    env = await createE2eEnv();
    dir = await fsp.mkdtemp(path.join(tmpdir(), 'attacker-carry-'));
    config = path.join(dir, 'docs.json');
    await fsp.writeFile(config, LIVE_CONFIG);
    sinksFile = await writeSinksFile(dir, {
      'prod-config': { type: 'file', path: config, domains: ['victim.example.com', 'retry-victim.example.com'] },
    });
    attacker = await startArchiveServer();
    stack = await startDocsAdminStack(
      env,
      { exportQueuedMs: 100, exportDurationMs: 300 },
      { ADMIN_API_KEY: KEY, TEMPORAL_TASK_QUEUE: taskQueue, KEEPER_SINKS_FILE: sinksFile },
    );
    emu = stack.emu;
    api = new AdminApiClient({ baseUrl: emu.url, apiKey: KEY });
  });

  after(async () => {
    await terminateAll(env.client, started);
    await api?.close();
    await stack?.close();
    await attacker?.close();
    await env?.teardown();
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
  });

  /** Every request the emulator has answered, of any route and status. */
  const apiCalls = () =>
    Object.values(emu.counters().calls).reduce(
      (sum, byStatus) => sum + Object.values(byStatus).reduce((a, b) => a + b, 0),
      0,
    );

  /** The run fails InvalidInput, non-retryable, naming the carry field and never its contents (within a minute). */
  async function refused(result: Promise<unknown>, field: 'carry' | 'carried', reason: RegExp): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the workflow neither failed nor ended within 60 s')), 60_000);
    });
    const err = await failureOf(Promise.race([result, deadline])).finally(() => clearTimeout(timer));
    assert.equal(err.type, 'InvalidInput', err.message);
    assert.equal(err.nonRetryable, true);
    assert.match(err.message, new RegExp(`${field} is set only by the workflow itself when it continues as new`));
    assert.match(err.message, reason);
    assert.doesNotMatch(err.message, /127\.0\.0\.1|sig=|exp_|aj_/, 'the carry is not echoed');
  }

  /** A carry as a keeper writes it: its sink resolved, and the attacker's archive pending as a new bundle. */
  const forgedKeeperCarry = (): BundleKeeperCarry => ({
    current: null,
    pending: {
      jobId: 'exp_forged',
      version: null,
      bundle: {
        bundleUrl: `${attacker.url}/bundle.tar.gz?sig=forged`,
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
        sizeBytes: attacker.sizeBytes,
      },
      failures: 0,
      retryAtMs: null,
    },
    version: null,
    exportsDone: 1,
    refreshesDone: 0,
    paused: false,
    export: { state: 'idle' },
    sink: { state: 'resolved', name: 'prod-config', type: 'file' },
    lastError: null,
    generation: 1,
  });

  async function assertNothingApplied(callsBefore: number): Promise<void> {
    assert.equal(apiCalls(), callsBefore, 'the emulator saw no call');
    assert.equal(await fsp.readFile(config, 'utf8'), LIVE_CONFIG, "the deployment's config is unchanged");
    assert.equal(attacker.hits(), 0, "nothing fetched the attacker's archive");
  }

  test("bundleKeeper: a carry with its sink resolved and the attacker's bundle pending applies nothing", async () => {
    const calls = apiCalls();
    for (const field of ['carry', 'carried'] as const) {
      const workflowId = `bundle-keeper:victim.example.com:${field}-${run}`;
      started.push(workflowId);
      const handle = await env.client.workflow.start(WorkflowType.bundleKeeper, {
        taskQueue,
        workflowId,
        args: [{ domain: 'victim.example.com', sink: 'prod-config', [field]: forgedKeeperCarry() }],
      });
      try {
        await refused(handle.result(), field, /this run did not continue from an earlier one/);
      } finally {
        await assertNothingApplied(calls);
      }
    }
  });

  test('bundleKeeper: the same carry in a retried run (it continues from attempt 1, as attempt 2) is refused', async () => {
    // No worker serves this queue until attempt 1 has timed out: the retry then runs with the forged
    // input and continuedFromExecutionRunId set, as a starter can arrange whenever the workers are slow.
    const retryQueue = uniqueTaskQueue('attacker-carry-retry');
    const workflowId = `bundle-keeper:retry-victim.example.com:${run}`;
    started.push(workflowId);
    const calls = apiCalls();
    const handle = await env.client.workflow.start(WorkflowType.bundleKeeper, {
      taskQueue: retryQueue,
      workflowId,
      args: [{ domain: 'retry-victim.example.com', sink: 'prod-config', carry: forgedKeeperCarry() }],
      workflowRunTimeout: '5s',
      retry: { maximumAttempts: 2, initialInterval: '2s', backoffCoefficient: 1 },
    });
    const first = env.client.workflow.getHandle(workflowId, handle.firstExecutionRunId);
    await waitFor(async () => (await first.describe()).status.name === 'TIMED_OUT', {
      timeoutMs: 30_000,
      what: 'attempt 1 to time out unserved',
    });
    const worker = await startDocsAdminWorker(
      env,
      { ADMIN_API_URL: emu.url, ADMIN_API_KEY: KEY, TEMPORAL_TASK_QUEUE: retryQueue, KEEPER_SINKS_FILE: sinksFile },
      { serveLimiter: false },
    );
    try {
      await refused(handle.result(), 'carry', /this run is retry attempt 2, which repeats its starter's input/);
    } finally {
      await worker.close();
      await assertNothingApplied(calls);
    }
    const retried = await env.client.workflow.getHandle(workflowId).describe();
    assert.notEqual(retried.runId, handle.firstExecutionRunId, 'the refusal came from the retried run');
  });

  test("staticExport: a carry naming another domain's job neither polls nor bundles it", async () => {
    const victim = await api.startExport({ domain: 'victim-export.example.com' });
    const calls = apiCalls();
    const workflowId = `static-export:attacker.example.com:${run}`;
    started.push(workflowId);
    const handle = await env.client.workflow.start(WorkflowType.staticExport, {
      taskQueue,
      workflowId,
      args: [
        { domain: 'attacker.example.com' },
        { carry: { jobId: victim.jobId, observations: [], polls: 0, startedAtMs: Date.now() } },
      ],
    });
    try {
      await refused(handle.result(), 'carry', /did not continue from an earlier one/);
    } finally {
      assert.equal(apiCalls(), calls, 'the emulator saw no call');
      assert.equal(emu.counters().bundlesGenerated, 0, "no link to the victim's bundle");
    }
  });

  test('agentJob: a carry holding a job polls nothing and creates nothing', async () => {
    const projectId = `victim-${run}`;
    const victim = await api.createAgentJob(projectId, 'Document the unreleased pricing');
    const calls = apiCalls();
    const workflowId = `agent-job:${projectId}:attacker-${run}`;
    started.push(workflowId);
    const handle = await env.client.workflow.start(WorkflowType.agentJob, {
      taskQueue,
      workflowId,
      args: [
        { projectId, prompt: 'anything' },
        { carry: { job: victim, observations: [], polls: 0, messagesSent: 0, startedAtMs: Date.now() } },
      ],
    });
    try {
      await refused(handle.result(), 'carry', /did not continue from an earlier one/);
    } finally {
      assert.equal(apiCalls(), calls, 'the emulator saw no call');
    }
    assert.deepEqual(
      emu
        .jobs()
        .filter((j) => j.projectId === projectId)
        .map((j) => j.id),
      [victim.id],
      'no job created',
    );
  });

  test('agentRateLimiter: carried grants and a queue fill no window and signal nobody', async () => {
    const projectId = `limited-${run}`;
    const now = Date.now();
    const grants = Array.from({ length: 100 }, (_, i) => ({
      requesterWorkflowId: `ghost-${i}`,
      requestKey: 'create',
      atMs: now,
      freeAtMs: now + 3_600_000,
    }));
    const carried: RateLimiterCarry = {
      grants,
      queue: [{ requesterWorkflowId: `victim-job-${run}`, requestKey: 'k' }],
    };
    const workflowId = rateLimiterWorkflowId(projectId);
    started.push(workflowId);
    const handle = await env.client.workflow.start(WorkflowType.agentRateLimiter, {
      taskQueue: LIMITER_TASK_QUEUE,
      workflowId,
      args: [{ projectId, limit: 100, windowMs: 10_000, carried }],
    });
    await refused(handle.result(), 'carried', /did not continue from an earlier one/);
    const commands = ((await handle.fetchHistory()).events ?? []).filter(
      (e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes || e.timerStartedEventAttributes,
    );
    assert.deepEqual(commands, [], 'no grant signalled, no window waited for');
  });
});
