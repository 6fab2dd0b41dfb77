// Bad inputs and bad credentials: each ends in a clear, typed failure, and the emulator sees no retry
// of it (at most the one call that found out; none when the input is refused before any call).
//   empty prompt, invalid domain   refused by the client library (InvalidInputError, nothing started)
//                                  and, started raw, by the workflow (InvalidInput): zero API calls
//   wrong (revoked) key            Unauthorized after exactly one call per workflow
//   non-Enterprise key             PlanRequired after exactly one startExport call
//   unknown job id                 NotFound after exactly one status call (the API forgot the jobs)
//   key without the mint_ prefix   the worker refuses to start, naming the variable, not the value
// On the cluster by default (see target.ts).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import type { Client } from '@temporalio/client';
import { ROOT } from '../../scripts/tools';
import { InvalidInputError, startAgentJob, startExport } from '../../src/client';
import { startEmulator, type EmulatorCounters, type EmulatorHandle } from '../../emulator';
import { WorkflowType } from '../../src/shared/workflow-types';
import { agentStatusQuery, agentWorkflowId } from '../../src/shared/agent-job';
import { exportStatusQuery, exportWorkflowId } from '../../src/shared/static-export';
import { workflowBundle } from '../helpers/temporal';
import { startInProcessWorker, type InProcessWorker } from './faults';
import { failureTypeOf, scanForSecret, secretKey, until } from './helpers';
import { chaosServer, type ChaosServer } from './target';

const good = secretKey('chaosgood');
const revoked = secretKey('chaosrevoked');
const basic = secretKey('chaosbasic');
const queues = {
  good: `bad-inputs-good-${Date.now()}`,
  revoked: `bad-inputs-revoked-${Date.now()}`,
  basic: `bad-inputs-basic-${Date.now()}`,
};

let server: ChaosServer;
let emulator: EmulatorHandle;
const workers: InProcessWorker[] = [];
let client: Client;

const calls = (c: EmulatorCounters, route: string): Record<string, number> => c.calls[route] ?? {};
const total = (c: EmulatorCounters, route: string): number => Object.values(calls(c, route)).reduce((a, b) => a + b, 0);

/** Starts a workflow without the client library's validation and returns its failure type. */
async function failureOf(
  type: string,
  workflowId: string,
  taskQueue: string,
  input: unknown,
): Promise<string | undefined> {
  const handle = await client.workflow.start(type, { workflowId, taskQueue, args: [input] });
  try {
    await handle.result();
    return undefined;
  } catch (err) {
    return failureTypeOf(err);
  }
}

before(async () => {
  server = await chaosServer();
  emulator = await startEmulator({
    agentActiveMs: 30_000,
    exportQueuedMs: 30_000,
    revokedKeys: [revoked],
    nonEnterpriseKeys: [basic],
    rateLimit: { limit: 100_000, windowMs: 3_600_000 },
  });
  const bundle = await workflowBundle();
  for (const [name, key] of [
    ['good', good],
    ['revoked', revoked],
    ['basic', basic],
  ] as const) {
    workers.push(
      await startInProcessWorker({
        address: server.address,
        taskQueue: queues[name],
        emulator,
        key,
        workflowBundle: bundle,
      }),
    );
  }
  client = workers[0]!.client;
});

after(async () => {
  for (const w of workers) await w.close();
  await emulator?.close();
  await server?.close();
});

test('empty prompt and invalid domain: refused before any API call', { timeout: 120_000 }, async () => {
  await assert.rejects(
    startAgentJob(client, { projectId: 'docs', prompt: '' }, { taskQueue: queues.good }),
    InvalidInputError,
  );
  await assert.rejects(
    startExport(client, { domain: 'https://docs.example.com/path' }, { taskQueue: queues.good }),
    InvalidInputError,
  );

  assert.equal(
    await failureOf(WorkflowType.agentJob, agentWorkflowId('docs', 'empty'), queues.good, {
      projectId: 'docs',
      prompt: '',
    }),
    'InvalidInput',
  );
  assert.equal(
    await failureOf(WorkflowType.agentJob, agentWorkflowId('docs', 'blank'), queues.good, {
      projectId: 'docs',
      prompt: '   ',
    }),
    'InvalidInput',
  );
  assert.equal(
    await failureOf(WorkflowType.staticExport, exportWorkflowId('bad', 'scheme'), queues.good, {
      domain: 'https://docs.example.com/path',
    }),
    'InvalidInput',
  );
  assert.equal(
    await failureOf(WorkflowType.staticExport, exportWorkflowId('bad', 'space'), queues.good, {
      domain: 'docs example com',
    }),
    'InvalidInput',
  );
  const c = emulator.counters();
  assert.equal(total(c, 'createAgentJob'), 0, 'no agent call');
  assert.equal(total(c, 'startExport'), 0, 'no export call');
});

test(
  'wrong key: Unauthorized after exactly one call; non-Enterprise key: PlanRequired after one call',
  { timeout: 120_000 },
  async () => {
    const before = emulator.counters();
    assert.equal(
      await failureOf(WorkflowType.staticExport, exportWorkflowId('revoked.docs.example.com', 'r1'), queues.revoked, {
        domain: 'revoked.docs.example.com',
      }),
      'Unauthorized',
    );
    assert.equal(
      await failureOf(WorkflowType.agentJob, agentWorkflowId('revoked', 'r1'), queues.revoked, {
        projectId: 'revoked',
        prompt: 'Fix a typo',
        requestId: 'r1',
      }),
      'Unauthorized',
    );
    assert.equal(
      await failureOf(WorkflowType.staticExport, exportWorkflowId('basic.docs.example.com', 'b1'), queues.basic, {
        domain: 'basic.docs.example.com',
      }),
      'PlanRequired',
    );
    const after = emulator.counters();
    assert.equal(
      (calls(after, 'startExport')['401'] ?? 0) - (calls(before, 'startExport')['401'] ?? 0),
      1,
      'one startExport call with the revoked key',
    );
    assert.equal(
      (calls(after, 'createAgentJob')['401'] ?? 0) - (calls(before, 'createAgentJob')['401'] ?? 0),
      1,
      'one createAgentJob call with the revoked key',
    );
    assert.equal(
      (calls(after, 'startExport')['403'] ?? 0) - (calls(before, 'startExport')['403'] ?? 0),
      1,
      'one startExport call with the basic key',
    );
    assert.equal(total(after, 'startExport') - total(before, 'startExport'), 2, 'no retries');
    assert.equal(total(after, 'createAgentJob') - total(before, 'createAgentJob'), 1, 'no retries');
  },
);

test(
  'a key without the mint_ prefix: the worker refuses to start and does not echo it',
  { timeout: 60_000 },
  async () => {
    const key = 'sk_live_not_an_admin_key_0123456789';
    const result = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'src', 'worker.ts')],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          ADMIN_API_URL: emulator.url,
          ADMIN_API_KEY: key,
          TEMPORAL_ADDRESS: server.address,
          METRICS_PORT: '0',
        },
        timeout: 60_000,
      },
    ).then(
      () => ({ code: 0, output: '' }),
      (err: { code?: number; stdout?: string; stderr?: string }) => ({
        code: err.code ?? -1,
        output: `${err.stdout ?? ''}${err.stderr ?? ''}`,
      }),
    );
    assert.notEqual(result.code, 0);
    assert.match(result.output, /ADMIN_API_KEY/);
    assert.ok(!result.output.includes(key) && !result.output.includes('not_an_admin_key'), 'the key is not echoed');
  },
);

test('unknown job id: NotFound after exactly one status call', { timeout: 120_000 }, async () => {
  const agent = await client.workflow.start(WorkflowType.agentJob, {
    workflowId: agentWorkflowId('forgotten', 'f1'),
    taskQueue: queues.good,
    args: [{ projectId: 'forgotten', prompt: 'Rewrite the quickstart', requestId: 'f1' }],
  });
  const exportHandle = await client.workflow.start(WorkflowType.staticExport, {
    workflowId: exportWorkflowId('forgotten.docs.example.com', 'f1'),
    taskQueue: queues.good,
    args: [{ domain: 'forgotten.docs.example.com' }],
  });
  await until(async () => (await agent.query(agentStatusQuery)).jobId, 'the agent job to exist');
  await until(async () => (await exportHandle.query(exportStatusQuery)).jobId, 'the export job to exist');
  emulator.reset(); // the API no longer knows either job id; counters start again from zero

  const agentFailure = await agent.result().then(
    () => undefined,
    (err: unknown) => failureTypeOf(err),
  );
  const exportFailure = await exportHandle.result().then(
    () => undefined,
    (err: unknown) => failureTypeOf(err),
  );
  assert.equal(agentFailure, 'NotFound');
  assert.equal(exportFailure, 'NotFound');
  const c = emulator.counters();
  assert.deepEqual(calls(c, 'getAgentJob'), { '404': 1 }, 'one status call, not retried');
  assert.deepEqual(calls(c, 'getExport'), { '404': 1 }, 'one status call, not retried');
});

test('secrets: no key in any history, worker log or CLI output', { timeout: 120_000 }, async () => {
  const scan = await scanForSecret({
    key: revoked,
    client,
    server,
    taskQueues: Object.values(queues),
    logs: { 'worker log': workers[0]!.logs.join('') },
  });
  assert.ok(scan.historiesScanned >= 8, `scanned ${scan.historiesScanned} histories`);
  assert.deepEqual(scan.found, [], 'the revoked key (which the emulator echoes in its 401 text) appears nowhere');
  for (const key of [good, basic]) {
    assert.deepEqual(
      (
        await scanForSecret({
          key,
          client,
          server,
          taskQueues: Object.values(queues),
          logs: { 'worker log': workers[0]!.logs.join('') },
          cliSample: 1,
        })
      ).found,
      [],
    );
  }
});
