// Fault injection: the worker process is killed with SIGKILL while 200 lifecycles are in flight, and a
// new one takes over. Every workflow completes with the right result and the emulator holds exactly one
// agent job per agent workflow (no duplicate from a create that was in flight when the worker died).
import assert from 'node:assert/strict';
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

let server: DevServer;
let emulator: EmulatorHandle;
let conn: Awaited<ReturnType<typeof connect>>;
const workers: WorkerProcess[] = [];

before(async () => {
  server = await DevServer.start();
  emulator = await startEmulator({ agentActiveMs: 2_000, exportQueuedMs: 500, exportDurationMs: 3_000, rateLimit: { limit: 100_000, windowMs: 3_600_000 } });
  conn = await connect(server.address);
});

after(async () => {
  for (const w of workers) await w.kill('SIGKILL');
  await conn?.close();
  await emulator?.close();
  await server?.stop();
});

test(`SIGKILL of the worker with ${LIFECYCLES} lifecycles in flight: nothing lost, no duplicate agent job`, { timeout: 600_000 }, async () => {
  const key = secretKey('chaoskill');
  const taskQueue = `chaos-kill-${Date.now()}`;
  const env = {
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_TASK_QUEUE: taskQueue,
    ADMIN_API_URL: emulator.url,
    ADMIN_API_KEY: key,
    AGENT_RATE_LIMIT: '100000/1h',
  };
  const first = await WorkerProcess.start({ env });
  workers.push(first);

  const half = Math.floor(LIFECYCLES / 2);
  const lifecycles = await startLifecycles(conn.client, taskQueue, { exports: half, agents: LIFECYCLES - half, tag: 'kill' });
  // Mid-flight: some agent jobs created and some exports started, but far from all done.
  await until(() => {
    const c = emulator.counters();
    return Object.values(c.agentJobsCreated).reduce((a, b) => a + b, 0) >= LIFECYCLES / 8 && c.exportsStarted >= LIFECYCLES / 8;
  }, 'lifecycles in flight', 120_000);
  const atKill = emulator.counters();
  await first.kill('SIGKILL');
  assert.equal(first.child.signalCode, 'SIGKILL');

  const second = await WorkerProcess.start({ env });
  workers.push(second);
  const settled = await settle(conn.client, [...lifecycles.exportIds, ...lifecycles.agents.map((a) => a.workflowId)]);
  // A create whose request was on the wire when the worker died may or may not have reached the API: by
  // policy its workflow ends with OutcomeUnknown (never a silent retry, so never a duplicate). An attempt
  // that died before sending is sent again, and one that died after the answer keeps it (send
  // checkpoints): everything else completes.
  const outcome = checkOutcomes(lifecycles, settled, emulator.jobs(), { allowOutcomeUnknown: true });
  const counters = emulator.counters();
  console.log(
    `killed after ${Object.values(atKill.agentJobsCreated).reduce((a, b) => a + b, 0)} agent creates and ${atKill.exportsStarted} export starts; ` +
      `finally ${outcome.exportsCompleted}/${half} exports and ${outcome.agentsCompleted}/${LIFECYCLES - half} agent jobs completed ` +
      `(${outcome.agentsOutcomeUnknown} OutcomeUnknown), ` +
      `${emulator.jobs().length} agent jobs at the emulator, ${counters.exportsStarted} exports started`,
  );
  assert.deepEqual(outcome.problems, []);
  assert.equal(outcome.duplicates, 0);
  assert.equal(outcome.exportsCompleted, half);
  assert.equal(outcome.agentsCompleted + outcome.agentsOutcomeUnknown, LIFECYCLES - half);
  // Only creates whose request was on the wire at the kill can be unknown: their checkpoint says 'sending'.
  assert.ok(outcome.agentsOutcomeUnknown <= 10, `${outcome.agentsOutcomeUnknown} agent workflows ended OutcomeUnknown`);
  for (const s of settled.filter((x) => x.failureType === 'OutcomeUnknown')) {
    const events = (await conn.client.workflow.getHandle(s.workflowId).fetchHistory()).events ?? [];
    const timedOut = events.find((e) => e.activityTaskTimedOutEventAttributes)?.activityTaskTimedOutEventAttributes;
    const details = timedOut?.failure?.timeoutFailureInfo?.lastHeartbeatDetails?.payloads?.[0]?.data;
    assert.ok(details, `${s.workflowId}: OutcomeUnknown without a send checkpoint`);
    assert.equal(JSON.parse(Buffer.from(details).toString()).phase, 'sending', `${s.workflowId}: OutcomeUnknown although the attempt recorded an answer`);
  }
  const jobs = emulator.jobs().length;
  assert.ok(jobs >= outcome.agentsCompleted && jobs <= LIFECYCLES - half, `${jobs} agent jobs: at most one per agent workflow`);

  await second.kill('SIGTERM');
  const scan = await scanForSecret({
    key,
    client: conn.client,
    server,
    taskQueues: [taskQueue],
    logs: { 'first worker log': first.output.text, 'second worker log': second.output.text },
  });
  assert.ok(scan.historiesScanned >= LIFECYCLES, `scanned ${scan.historiesScanned} histories`);
  assert.deepEqual(scan.found, [], 'the API key appears nowhere');
});
