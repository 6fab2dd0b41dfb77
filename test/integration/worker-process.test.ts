// test-lane: parallel
// `npm run worker` as an orchestrator sees it: real worker processes against a dev server and the
// emulator, on loopback only. Several workers share a host with METRICS_PORT unset; an explicit taken
// port, a closed Temporal address or a missing namespace fail the start at once, non-zero, with the
// cause on stderr; SIGTERM ends the process within SHUTDOWN_GRACE_TIME + 10 s, stuck activity or not.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { NativeConnection } from '@temporalio/worker';
import { DEFAULT_METRICS_PORT, type WorkerConfig } from '../../src/config';
import { type EmulatorHandle, startEmulator } from '../../emulator';
import { freeLoopbackPort } from '../../src/observability/free-port';
import { DEFAULT_TASK_QUEUE } from '../../src/shared/defaults';
import { WorkflowType } from '../../src/shared/workflow-types';
import { rateLimiterWorkflowId } from '../../src/shared/rate-limiter';
import { createDocsAdminWorker, EXIT_CODE, SHUTDOWN_DEADLINE_MARGIN_MS } from '../../src/worker';
import { LIMITER_STICKY_TIMEOUT_MS } from '../../src/worker/worker';
import {
  FAST_AGENT_POLLS,
  createDevEnv,
  type DevEnv,
  uniqueTaskQueue,
  waitFor,
  workflowBundle,
} from '../helpers/temporal';
import { writeSinksFile } from '../helpers/sinks';
import { bundleCacheEnv, bundleCacheNodeArgs } from '../helpers/bundle-cache';

const ROOT = path.resolve(__dirname, '../..');
const KEY = 'mint_worker_process_test_key_0123456789';
const GRACE_MS = 2_000;
/** Slack for a loaded 2-core machine on top of the limits under test. */
const SLACK_MS = 3_000;

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  atMs: number;
}

/** `node --import tsx <script>` with exactly `env` (plus PATH, HOME and the bundle cache); stdout and stderr collected. */
class Spawned {
  stdout = '';
  stderr = '';
  readonly exited: Promise<Exit>;
  readonly child;
  readonly startedAtMs = Date.now();

  constructor(
    readonly env: Record<string, string>,
    script = 'src/worker.ts',
  ) {
    // With the test run's workflow bundle cache (test/helpers/bundle-cache.ts): each start's bundle is made once.
    this.child = spawn(process.execPath, ['--import', 'tsx', ...bundleCacheNodeArgs(), script], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...bundleCacheEnv(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout.on('data', (chunk: Buffer) => (this.stdout += chunk.toString()));
    this.child.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => resolve({ code, signal, atMs: Date.now() })),
    );
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The JSON log lines (LOG_FORMAT=json); other stderr text is skipped. */
  logLines(): { level: string; msg: string; [key: string]: unknown }[] {
    return this.stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: string; msg: string });
  }

  async waitStarted(): Promise<{ metrics: string }> {
    const line = await waitFor(
      () => {
        if (!this.running) throw new Error(`the worker exited before it started:\n${this.stderr}`);
        return this.logLines().find((l) => l.msg === 'docs-admin worker started');
      },
      { timeoutMs: 90_000, intervalMs: 100, what: 'the worker to start' },
    );
    return line as unknown as { metrics: string };
  }

  /** Waits for the exit (at most timeoutMs), killing the process if it is still there. */
  async exit(timeoutMs: number): Promise<Exit> {
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  async kill(): Promise<void> {
    if (this.running) this.child.kill('SIGKILL');
    await this.exited;
  }
}

/** A listener on 127.0.0.1:port, or null when another process holds the port already. */
async function occupy(port: number): Promise<net.Server | null> {
  const server = net.createServer((socket) => socket.destroy());
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(null) : reject(err)));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

const closeServer = (server: net.Server | null) =>
  new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));

describe('the worker process', () => {
  let env: DevEnv;
  let emu: EmulatorHandle;
  const spawned: Spawned[] = [];

  const workerEnv = (extra: Record<string, string> = {}): Record<string, string> => ({
    ADMIN_API_URL: emu.url,
    ADMIN_API_KEY: KEY,
    TEMPORAL_ADDRESS: env.address,
    TEMPORAL_NAMESPACE: env.namespace ?? 'default',
    TEMPORAL_TASK_QUEUE: uniqueTaskQueue('worker-proc'),
    LOG_FORMAT: 'json',
    SHUTDOWN_GRACE_TIME: `${GRACE_MS}ms`,
    ...extra,
  });
  const start = (extra?: Record<string, string>, script?: string) => {
    const worker = new Spawned(workerEnv(extra), script);
    spawned.push(worker);
    return worker;
  };

  before(async () => {
    env = await createDevEnv();
    emu = await startEmulator({ exportQueuedMs: 100, exportDurationMs: 500 });
  });

  after(async () => {
    await Promise.all(spawned.map((w) => w.kill()));
    await emu?.close();
    await env?.teardown();
  });

  test('two workers with METRICS_PORT unset share the host: each serves /metrics on a port of its own', async () => {
    // The default port is taken: by this test, or by whoever held it already.
    const holder = await occupy(DEFAULT_METRICS_PORT);
    try {
      const workers = [start({ METRICS_PORT: '' }), start({ METRICS_PORT: '' })];
      const started = await Promise.all(workers.map((w) => w.waitStarted()));
      const urls = started.map((s) => new URL(s.metrics));
      for (const [i, url] of urls.entries()) {
        assert.equal(url.hostname, '127.0.0.1');
        assert.notEqual(Number(url.port), DEFAULT_METRICS_PORT);
        const warning = workers[i]!.logLines().find(
          (l) => l.level === 'WARN' && l.msg.includes(`metrics port ${DEFAULT_METRICS_PORT}`),
        );
        assert.ok(warning?.msg.includes(url.href), `the warning names the port in use instead: ${warning?.msg}`);
        const response = await fetch(url);
        assert.equal(response.status, 200);
        assert.match(await response.text(), /^# TYPE docs_admin_api_calls_total counter$/m, "the project's metrics");
      }
      assert.notEqual(urls[0]!.port, urls[1]!.port);

      for (const w of workers) w.child.kill('SIGTERM');
      for (const w of workers) {
        const { code } = await w.exit(GRACE_MS + SHUTDOWN_DEADLINE_MARGIN_MS + SLACK_MS);
        assert.equal(code, EXIT_CODE.stopped, w.stderr);
      }
    } finally {
      await closeServer(holder);
    }
  });

  test('the worker logs the sinks it holds, names and types only; a sinks file it cannot read fails the start', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'worker-sinks-'));
    try {
      const sinksFile = await writeSinksFile(dir, {
        'prod-hook': {
          type: 'webhook',
          url: 'https://deploy.example.com/hooks?token=HOOKSECRET',
          domains: ['docs.example.com'],
        },
        'prod-config': { type: 'file', path: path.join(dir, 'docs.json'), domains: ['docs.example.com'] },
        'outside-config': { type: 'file', path: '/etc/docs.json', domains: ['docs.example.com'] },
      });
      // The start that fails beside the one that succeeds: each has a process of its own.
      const missing = path.join(dir, 'missing.yaml');
      const failed = start({ METRICS_PORT: '0', KEEPER_SINKS_FILE: missing });
      const worker = start({ METRICS_PORT: '0', KEEPER_SINKS_FILE: sinksFile });
      await worker.waitStarted();
      const line = worker.logLines().find((l) => l.msg.startsWith('keeper sinks from'));
      assert.equal(
        line?.msg,
        `keeper sinks from ${sinksFile}: prod-hook (webhook), prod-config (file); refused: outside-config`,
      );
      assert.doesNotMatch(worker.stderr, /HOOKSECRET|deploy\.example\.com|docs\.json/);
      worker.child.kill('SIGTERM');
      assert.equal((await worker.exit(GRACE_MS + SHUTDOWN_DEADLINE_MARGIN_MS + SLACK_MS)).code, EXIT_CODE.stopped);

      const { code } = await failed.exit(30_000);
      assert.equal(code, EXIT_CODE.failed, failed.stderr);
      assert.match(
        failed.stderr,
        new RegExp(`${missing.replace(/\./g, '\\.')}: cannot read the sinks file \\(ENOENT\\)`),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  // The exit's deadline catches a worker that goes on or waits; the time itself is only reported (a loaded
  // machine takes seconds just to load the worker).
  test('METRICS_PORT set to a taken port: exits 1 before it serves, naming the port and the variable', async (t) => {
    const port = await freeLoopbackPort();
    const holder = await occupy(port);
    assert.ok(holder, 'the test holds the port');
    try {
      const worker = start({ METRICS_PORT: String(port) });
      const { code, atMs } = await worker.exit(30_000);
      t.diagnostic(`exited after ${(atMs - worker.startedAtMs) / 1000} s`);
      assert.equal(code, EXIT_CODE.failed, worker.stderr);
      const errors = worker.logLines().filter((l) => l.level === 'ERROR');
      assert.equal(errors.length, 1, worker.stderr);
      assert.match(errors[0]!.msg, new RegExp(`METRICS_PORT=${port}\\b.*127\\.0\\.0\\.1:${port} is already in use`));
      assert.doesNotMatch(worker.stderr, /IllegalStateError|Cannot close connection/);
      assert.ok(!worker.logLines().some((l) => l.msg === 'docs-admin worker started'));
    } finally {
      await closeServer(holder);
    }
  });

  test('a Temporal address nobody listens on, or a namespace the server lacks: exits 1 with the cause', async (t) => {
    const closed = `127.0.0.1:${await freeLoopbackPort()}`;
    const cases = [
      {
        worker: start({ TEMPORAL_ADDRESS: closed }),
        cause: new RegExp(
          `cannot reach the Temporal server at ${closed.replace(/\./g, '\\.')} \\(connection refused\\)`,
        ),
      },
      {
        worker: start({ TEMPORAL_NAMESPACE: 'no-such-namespace' }),
        cause: /namespace "no-such-namespace" does not exist on the Temporal server at/,
      },
    ];
    for (const { worker, cause } of cases) {
      // The exit's deadline catches a worker that keeps retrying; the time itself is only reported.
      const { code, atMs } = await worker.exit(30_000);
      t.diagnostic(`exited after ${(atMs - worker.startedAtMs) / 1000} s`);
      assert.equal(code, EXIT_CODE.failed, worker.stderr);
      const errors = worker.logLines().filter((l) => l.level === 'ERROR');
      assert.equal(errors.length, 1, worker.stderr);
      assert.match(errors[0]!.msg, cause);
      assert.doesNotMatch(worker.stderr, /IllegalStateError|still running/);
    }
  });

  /**
   * Starts an agent job whose create call `hanging` (an emulator of its own, every create slow) holds,
   * once the call has arrived. The create is an activity task, which the SDK cancels at the end of the
   * grace time (an export's calls are local activities, which it does not: the shutdown deadline ends those).
   */
  async function agentCreateHanging(hanging: EmulatorHandle, projectId: string, taskQueue: string | undefined) {
    const handle = await env.client.workflow.start(WorkflowType.agentJob, {
      taskQueue: taskQueue ?? DEFAULT_TASK_QUEUE,
      workflowId: `${projectId}-${Date.now()}`,
      args: [{ projectId, prompt: 'Document the shutdown path.' }],
    });
    await waitFor(() => (hanging.counters().faultsInjected.slow ?? 0) > 0, {
      timeoutMs: 30_000,
      what: 'the create call at the emulator',
    });
    return handle;
  }

  /** A worker (`script`) whose creates hang at an emulator of its own; closed with it. */
  async function withHangingCreates(
    script: string | undefined,
    fn: (worker: Spawned, hanging: EmulatorHandle) => Promise<void>,
  ) {
    const hanging = await startEmulator({});
    hanging.setFaults([{ route: 'createAgentJob', kind: 'slow', delayMs: 120_000 }]);
    try {
      const worker = start({ ADMIN_API_URL: hanging.url }, script);
      await worker.waitStarted();
      await fn(worker, hanging);
    } finally {
      await hanging.close();
    }
  }

  // Side by side: each waits out a shutdown (grace time, or grace + 10 s) with an emulator of its own.
  describe('SIGTERM with an activity in flight', { concurrency: 2 }, () => {
    test('SIGTERM while an agent create call hangs: the call is cancelled after the grace time, exit 0', async () => {
      await withHangingCreates(undefined, async (worker, hanging) => {
        await agentCreateHanging(hanging, 'sigterm-drain', worker.env.TEMPORAL_TASK_QUEUE);
        const signalledAt = Date.now();
        worker.child.kill('SIGTERM');
        const { code, atMs } = await worker.exit(GRACE_MS + SHUTDOWN_DEADLINE_MARGIN_MS + SLACK_MS);
        const ms = atMs - signalledAt;
        assert.equal(code, EXIT_CODE.stopped, worker.stderr);
        assert.ok(ms >= GRACE_MS, `the activity had its grace time (exit after ${ms} ms)`);
        assert.ok(ms < GRACE_MS + SHUTDOWN_DEADLINE_MARGIN_MS, `exit after ${ms} ms`);
        assert.ok(worker.logLines().some((l) => l.msg === 'docs-admin worker stopped'));
        process.stdout.write(`# SIGTERM to exit, cancellable activity in flight: ${ms} ms\n`);
      });
    });

    test('SIGTERM while an activity ignores its cancellation: the deadline exits 2 at grace + 10 s, naming it', async () => {
      await withHangingCreates('test/fixtures/worker-ignoring-cancellation.ts', async (worker, hanging) => {
        const handle = await agentCreateHanging(hanging, 'sigterm-stuck', worker.env.TEMPORAL_TASK_QUEUE);
        const signalledAt = Date.now();
        worker.child.kill('SIGTERM');
        // A duplicate delivery (npm and tsx relay a terminal's Ctrl-C) must not force the exit.
        worker.child.kill('SIGTERM');
        const limitMs = GRACE_MS + SHUTDOWN_DEADLINE_MARGIN_MS;
        const { code, atMs } = await worker.exit(limitMs + SLACK_MS);
        const ms = atMs - signalledAt;
        assert.equal(code, EXIT_CODE.forced, worker.stderr);
        assert.ok(ms >= limitMs - 100 && ms < limitMs + SLACK_MS, `exit after ${ms} ms`);
        const last = worker
          .logLines()
          .filter((l) => l.level === 'ERROR')
          .at(-1);
        assert.match(
          last?.msg ?? '',
          new RegExp(
            `not stopped ${limitMs / 1000} s after SIGTERM.*createAgentJob \\(workflow ${handle.workflowId}, attempt 1, running`,
          ),
        );
        process.stdout.write(`# SIGTERM to exit, activity ignoring cancellation in flight: ${ms} ms\n`);
      });
    });
  });

  test('createDocsAdminWorker closed without running lets go of the connection it was given', async () => {
    const connection = await NativeConnection.connect({ address: env.address });
    const config: WorkerConfig = {
      address: env.address,
      namespace: env.namespace ?? 'default',
      taskQueue: uniqueTaskQueue('never-run'),
      adminApiUrl: emu.url,
      adminApiKey: KEY,
      agentRateLimit: { limit: 100, windowMs: 60_000 },
      metricsPort: 0,
    };
    const handle = await createDocsAdminWorker(config, {
      connection,
      client: env.client,
      workflowBundle: await workflowBundle(),
    });
    const t0 = Date.now();
    await handle.close();
    await connection.close(); // throws IllegalStateError while a Worker holds it
    assert.ok(Date.now() - t0 < 10_000, `released in ${Date.now() - t0} ms`);
  });

  test('two fleets in one process: the same task queue is refused clearly, another (on a connection of its own) serves the limiter too, and the process exits', async () => {
    const proc = start({}, 'test/fixtures/two-fleets-one-process.ts');
    const exit = await proc.exit(90_000);
    assert.equal(exit.signal, null, `the process had to be killed: something held it open\n${proc.stderr}`);
    assert.equal(exit.code, 0, proc.stderr);
    const result = JSON.parse(proc.stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
    assert.match(String(result.sameQueue), /already served by a worker of this process/);
    assert.deepEqual(
      { first: result.firstServesLimiter, other: result.otherServesLimiter },
      { first: true, other: true },
    );
  });

  test("a killed worker's limiter answers the next job's ask after the short sticky timeout, before the ask gives up", async () => {
    // Only this test's workers serve the limiter queue: the limiter's tasks stick to the first one.
    await Promise.all(spawned.map((w) => w.kill()));
    const taskQueue = uniqueTaskQueue('sticky');
    const projectId = `sticky-${taskQueue.slice(-8)}`;
    const runJob = async (n: number) => {
      const handle = await env.client.workflow.start(WorkflowType.agentJob, {
        taskQueue,
        workflowId: `${projectId}-job-${n}`,
        // Fast polls: the job's own polling (a 3 s floor by default) is not what this test waits for.
        args: [{ projectId, prompt: `Job ${n}` }, FAST_AGENT_POLLS],
      });
      await handle.result();
      return handle;
    };
    const first = start({ TEMPORAL_TASK_QUEUE: taskQueue });
    await first.waitStarted();
    await runJob(1);
    const second = start({ TEMPORAL_TASK_QUEUE: taskQueue });
    await second.waitStarted();
    // SIGKILL: the first worker never tells the server its sticky queue is gone.
    await first.kill();
    const job = await runJob(2);

    const limiterEvents = (await env.client.workflow.getHandle(rateLimiterWorkflowId(projectId)).fetchHistory())
      .events!;
    const timedOut = limiterEvents.find(
      (e) =>
        e.workflowTaskTimedOutEventAttributes?.timeoutType ===
        temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START,
    );
    // Either the task waited on the killed worker's sticky queue for the short timeout, or the server,
    // having seen no poll on that queue for a while (a slow start of this job), sent it to the normal
    // queue itself and wrote no timeout: both answer the ask in time, which the job's history checks.
    let stuckMs = 0;
    if (timedOut) {
      const scheduled = limiterEvents.find(
        (e) => Number(e.eventId) === Number(timedOut.workflowTaskTimedOutEventAttributes?.scheduledEventId),
      );
      assert.ok(scheduled, 'the timed-out task was scheduled in the same history');
      stuckMs = tsToMs(timedOut.eventTime) - tsToMs(scheduled.eventTime);
      assert.ok(
        stuckMs < LIMITER_STICKY_TIMEOUT_MS + SLACK_MS,
        `the sticky task moved to the normal queue after ${stuckMs} ms (the SDK's default is 10 s)`,
      );
    }
    // The ask was answered: no "limiter did not answer" wait (a timer) before the create.
    const jobEvents = (await job.fetchHistory()).events!;
    const create = jobEvents.findIndex((e) => e.activityTaskScheduledEventAttributes);
    const timer = jobEvents.findIndex((e) => e.timerStartedEventAttributes);
    assert.ok(
      create >= 0 && (timer < 0 || timer > create),
      'the second job created its job without waiting to ask again',
    );
    process.stdout.write(
      timedOut
        ? `# limiter task stuck on a killed worker's sticky queue: ${Math.round(stuckMs)} ms\n`
        : "# the server routed the limiter's task around the killed worker's sticky queue\n",
    );
  });
});
