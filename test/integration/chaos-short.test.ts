// The chaos suite, reduced to fit in `npm test` (the full one is `npm run chaos`): 40 lifecycles, the
// worker process killed with SIGKILL in flight, an in-process worker taking over under the API fault
// mix (5xx, resets, slow beyond the client timeout, non-JSON), then the secrets scan. Asserts nothing
// is lost: exports all complete; each agent workflow completes with exactly one job, or fails with
// OutcomeUnknown (the idempotency policy) with at most one job for its prompt; no duplicates.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { partitionConfig } from '../../bench/throughput';
import { startEmulator, type EmulatorHandle } from '../../emulator';
import { faultMix, startInProcessWorker, type InProcessWorker } from '../chaos/faults';
import { DevServer, WorkerProcess, checkOutcomes, connect, scanForSecret, secretKey, settle, startLifecycles, until } from '../chaos/helpers';

const LIFECYCLES = 40;

let server: DevServer;
let emulator: EmulatorHandle;
let child: WorkerProcess | undefined;
let inProcess: InProcessWorker | undefined;
let conn: Awaited<ReturnType<typeof connect>> | undefined;

before(async () => {
  server = await DevServer.start({ dynamicConfig: partitionConfig(1) });
  emulator = await startEmulator({ agentActiveMs: 1_500, exportQueuedMs: 200, exportDurationMs: 2_000, rateLimit: { limit: 100_000, windowMs: 3_600_000 } });
  conn = await connect(server.address);
});

after(async () => {
  await child?.kill('SIGKILL');
  await inProcess?.close();
  await conn?.close();
  await emulator?.close();
  await server?.stop();
});

test('SIGKILL of the worker, then the API fault mix: nothing lost, no duplicate agent job, no key anywhere', { timeout: 240_000 }, async () => {
  const key = secretKey('chaosshort');
  const taskQueue = `chaos-short-${Date.now()}`;
  child = await WorkerProcess.start({
    env: { TEMPORAL_ADDRESS: server.address, TEMPORAL_TASK_QUEUE: taskQueue, ADMIN_API_URL: emulator.url, ADMIN_API_KEY: key, AGENT_RATE_LIMIT: '100000/1h' },
  });
  const half = LIFECYCLES / 2;
  const lifecycles = await startLifecycles(conn!.client, taskQueue, { exports: half, agents: half, tag: 'short', projects: 4 });

  // Kill once every job exists and the API has been quiet for a moment (workflows asleep between polls):
  // an activity caught mid-call would only be retried after its 60 s start-to-close timeout, which the
  // full suite (test/chaos/worker-kill.test.ts) accepts and this short run avoids.
  let last = '';
  let quietSince = Date.now();
  await until(
    () => {
      const c = emulator.counters();
      const now = JSON.stringify(c.calls);
      if (now !== last) {
        last = now;
        quietSince = Date.now();
      }
      const created = Object.values(c.agentJobsCreated).reduce((a, b) => a + b, 0);
      return created >= half && c.exportsStarted >= half && Date.now() - quietSince >= 300;
    },
    'every job to exist',
    90_000,
    50,
  );
  await child.kill('SIGKILL');
  assert.equal(child.child.signalCode, 'SIGKILL');

  emulator.setFaults(faultMix(), 11);
  inProcess = await startInProcessWorker({ address: server.address, taskQueue, emulator, key });
  const settled = await settle(conn!.client, [...lifecycles.exportIds, ...lifecycles.agents.map((a) => a.workflowId)]);
  const outcome = checkOutcomes(lifecycles, settled, emulator.jobs(), { allowOutcomeUnknown: true });
  console.log(
    `faults ${JSON.stringify(emulator.counters().faultsInjected)}; exports ${outcome.exportsCompleted}/${half}; agent jobs ${outcome.agentsCompleted} completed, ` +
      `${outcome.agentsOutcomeUnknown} OutcomeUnknown, ${outcome.duplicates} duplicates; ${emulator.jobs().length} jobs at the emulator`,
  );
  assert.deepEqual(outcome.problems, []);
  assert.equal(outcome.duplicates, 0);
  assert.equal(outcome.exportsCompleted, half);
  // Every job was created before the faults began, so no create was ambiguous: all complete.
  assert.equal(outcome.agentsCompleted, half);
  assert.equal(emulator.jobs().length, half, 'exactly one agent job per agent workflow');

  emulator.setFaults([]);
  const scan = await scanForSecret({
    key,
    client: conn!.client,
    server,
    taskQueues: [taskQueue],
    logs: { 'worker process log': child.output.text, 'in-process worker log': inProcess.logs.join('') },
    cliSample: 2,
  });
  assert.ok(scan.historiesScanned >= LIFECYCLES);
  assert.deepEqual(scan.found, [], 'the API key appears nowhere');
});
