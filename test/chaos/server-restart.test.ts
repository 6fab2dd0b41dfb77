// Fault injection: the Temporal dev server (SQLite database in a temp dir, fixed port) is killed and
// restarted on the same port while lifecycles are in flight. The worker reconnects by itself; every
// workflow completes with the right result and exactly one agent job exists per agent workflow.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { startEmulator, type EmulatorHandle } from '../../emulator';
import {
  DevServer,
  WorkerProcess,
  checkOutcomes,
  connect,
  scanForSecret,
  secretKey,
  settle,
  startLifecycles,
  until,
} from './helpers';

const LIFECYCLES = Number(process.env.CHAOS_LIFECYCLES || 200);

let dir: string;
let server: DevServer;
let emulator: EmulatorHandle;
let worker: WorkerProcess | undefined;

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'docs-admin-chaos-'));
  server = await DevServer.start({ dbFile: path.join(dir, 'temporal.db') });
  emulator = await startEmulator({ agentActiveMs: 3_000, exportQueuedMs: 500, exportDurationMs: 4_000, rateLimit: { limit: 100_000, windowMs: 3_600_000 } });
});

after(async () => {
  await worker?.kill('SIGKILL');
  await emulator?.close();
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test(`dev server killed and restarted on the same port with ${LIFECYCLES} lifecycles in flight: nothing lost`, { timeout: 600_000 }, async () => {
  const key = secretKey('chaosrestart');
  const taskQueue = `chaos-restart-${Date.now()}`;
  worker = await WorkerProcess.start({
    env: { TEMPORAL_ADDRESS: server.address, TEMPORAL_TASK_QUEUE: taskQueue, ADMIN_API_URL: emulator.url, ADMIN_API_KEY: key, AGENT_RATE_LIMIT: '100000/1h' },
  });

  const half = Math.floor(LIFECYCLES / 2);
  let conn = await connect(server.address);
  const lifecycles = await startLifecycles(conn.client, taskQueue, { exports: half, agents: LIFECYCLES - half, tag: 'restart' });
  await conn.close();
  await until(() => {
    const c = emulator.counters();
    return Object.values(c.agentJobsCreated).reduce((a, b) => a + b, 0) >= LIFECYCLES / 8 && c.exportsStarted >= LIFECYCLES / 8;
  }, 'lifecycles in flight', 120_000);

  const pidBefore = server.pid;
  await server.restart('SIGKILL');
  assert.notEqual(server.pid, pidBefore, 'a new server process');
  assert.ok(worker.running, 'the worker survived the restart');

  conn = await connect(server.address);
  try {
    const settled = await settle(conn.client, [...lifecycles.exportIds, ...lifecycles.agents.map((a) => a.workflowId)]);
    const outcome = checkOutcomes(lifecycles, settled, emulator.jobs());
    console.log(
      `after the restart: ${outcome.exportsCompleted}/${half} exports and ${outcome.agentsCompleted}/${LIFECYCLES - half} agent jobs completed; ` +
        `${emulator.jobs().length} agent jobs and ${emulator.counters().exportsStarted} exports at the emulator`,
    );
    assert.deepEqual(outcome.problems, []);
    assert.equal(outcome.exportsCompleted, half);
    assert.equal(outcome.agentsCompleted, LIFECYCLES - half);
    assert.equal(emulator.jobs().length, LIFECYCLES - half, 'exactly one agent job per agent workflow');

    await worker.kill('SIGTERM');
    const scan = await scanForSecret({ key, client: conn.client, server, taskQueues: [taskQueue], logs: { 'worker log': worker.output.text, 'server log': server.output.text } });
    assert.deepEqual(scan.found, [], 'the API key appears nowhere');
  } finally {
    await conn.close();
  }
});
