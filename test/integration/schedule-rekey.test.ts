// test-lane: parallel
// A payload key rotated the staged way, as docs/security.md tells an operator, with the CLI in process
// against a dev server and the real worker: a Schedule written under key k1; k2 added decrypt-only, then
// promoted; `keys in-use` lists k1; `schedule rekey`; `keys in-use` no longer does; k1 dropped from the
// file; a triggered run still decodes its input and completes. A Schedule of an earlier release (its
// memo encrypted too) is created again by rekey, and listing every Schedule works without k1.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { scheduleKeyIds } from '../../src/client/key-usage';
import type { KeyUsageReport } from '../../src/client/key-usage';
import type { RekeyResult } from '../../src/client/schedule-rekey';
import { parseKeyFile, payloadEncryption } from '../../src/codec';
import { SearchAttr } from '../../src/shared/search-attributes';
import { WorkflowType } from '../../src/shared/workflow-types';
import type { StaticExportResult } from '../../src/shared/static-export';
import { runCli } from '../../src/starter';
import { type DocsAdminStack, createDevEnv, startDocsAdminStack, uniqueTaskQueue, waitFor } from '../helpers/temporal';

const KEY = 'mint_rekey_test_key_0123456789';

describe('staged payload key rotation with Schedules (keygen, keys in-use, schedule rekey)', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'schedule-rekey-'));
  const keysFile = path.join(dir, 'payload-keys');
  const taskQueue = uniqueTaskQueue('rekey');
  const tag = taskQueue.slice(-10);
  const domain = `rekey-${tag}.docs.example.com`;
  const scheduleId = `rekey-${tag}`;
  const legacyId = `rekey-legacy-${tag}`;
  let env: TestWorkflowEnvironment;
  let stack: DocsAdminStack | undefined;
  let cliEnv: NodeJS.ProcessEnv;
  let k1: string;
  let k2: string;

  async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    let stdout = '';
    let stderr = '';
    const code = await runCli(args, {
      stdout: { write: (s: string) => ((stdout += s), true) },
      stderr: { write: (s: string) => ((stderr += s), true) },
      env: cliEnv,
    });
    return { code, stdout, stderr };
  }
  const json = async <T>(args: string[]): Promise<T> => {
    const result = await cli([...args, '--json']);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout.trim().split('\n').at(-1) as string) as T;
  };
  const heldBy = (report: KeyUsageReport, keyId: string) => report.keys.find((k) => k.keyId === keyId);
  const encryptingKey = () => parseKeyFile(readFileSync(keysFile, 'utf8'), keysFile).current.id;

  before(async () => {
    env = await createDevEnv();
    cliEnv = {
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_TASK_QUEUE: taskQueue,
      PAYLOAD_ENCRYPTION_KEYS_FILE: keysFile,
    };
    const created = await cli(['keygen', '--add']);
    assert.equal(created.code, 0, created.stderr);
    k1 = encryptingKey();
    stack = await startDocsAdminStack(
      env,
      { exportQueuedMs: 50, exportDurationMs: 300 },
      { ADMIN_API_KEY: KEY, TEMPORAL_TASK_QUEUE: taskQueue, PAYLOAD_ENCRYPTION_KEYS_FILE: keysFile },
    );
  });

  after(async () => {
    await stack?.close();
    await env?.teardown();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a Schedule under k1, and one of an earlier release with its memo under k1', async () => {
    const created = await cli([
      'schedule',
      'create',
      '--id',
      scheduleId,
      '--domain',
      domain,
      '--every',
      '1d',
      '--paused',
    ]);
    assert.equal(created.code, 0, created.stderr);
    const held = await scheduleKeyIds(env.client, scheduleId);
    assert.deepEqual([...held.action], [k1]);
    assert.deepEqual([...held.memo], [], 'Schedules of this release carry no memo');
    // What `schedule create` wrote before this release: the same action and a {kind, domain} memo.
    const client = new Client({ connection: env.connection, dataConverter: payloadEncryption(keysFile).dataConverter });
    await client.schedule.create({
      scheduleId: legacyId,
      spec: { intervals: [{ every: '1d' }] },
      action: {
        type: 'startWorkflow',
        workflowType: WorkflowType.staticExport,
        workflowId: `static-export:${domain}:legacy`,
        taskQueue,
        args: [{ domain }],
      },
      state: { paused: true },
      memo: { kind: 'export', domain },
      typedSearchAttributes: [{ key: SearchAttr.domain, value: domain }],
    });
    assert.deepEqual([...(await scheduleKeyIds(env.client, legacyId)).memo], [k1]);
    const report = await json<KeyUsageReport>(['keys', 'in-use']);
    assert.equal(heldBy(report, k1)?.schedules, 2);
    assert.ok(report.complete);
  });

  test('k2 added decrypt-only, then promoted: nothing new is encrypted with k2 before the promotion', async () => {
    const added = await cli(['keygen', '--add']);
    assert.equal(added.code, 0, added.stderr);
    k2 = /^(\S+): added/.exec(added.stdout)?.[1] as string;
    assert.ok(k2 && k2 !== k1, added.stdout);
    assert.equal(encryptingKey(), k1, 'decrypt-only until promoted');
    const promoted = await cli(['keygen', '--promote', k2]);
    assert.equal(promoted.code, 0, promoted.stderr);
    assert.equal(encryptingKey(), k2);
    const report = await json<KeyUsageReport & { unused: string[] }>(['keys', 'in-use']);
    assert.ok(heldBy(report, k1), 'the Schedules still hold k1');
    assert.deepEqual(report.unused, [], 'k1 cannot be dropped yet');
  });

  test('schedule rekey: the action is written again under k2, the legacy Schedule created again', async () => {
    const rekeyed = await json<{ currentKeyId: string; schedules: RekeyResult[] }>(['schedule', 'rekey']);
    assert.equal(rekeyed.currentKeyId, k2);
    const outcome = (id: string) => rekeyed.schedules.find((s) => s.scheduleId === id);
    assert.deepEqual(outcome(scheduleId), { scheduleId, outcome: 'rekeyed', keyIdsBefore: [k1] });
    assert.deepEqual(outcome(legacyId), { scheduleId: legacyId, outcome: 'recreated', keyIdsBefore: [k1] });
    assert.deepEqual([...(await scheduleKeyIds(env.client, scheduleId)).action], [k2]);
    const report = await json<KeyUsageReport & { unused: string[] }>(['keys', 'in-use']);
    assert.equal(heldBy(report, k1), undefined, 'nothing holds k1');
    assert.equal(heldBy(report, k2)?.schedules, 2);
    assert.deepEqual(report.unused, [k1]);
    const again = await json<{ schedules: RekeyResult[] }>(['schedule', 'rekey']);
    assert.deepEqual(
      again.schedules.filter((s) => [scheduleId, legacyId].includes(s.scheduleId)).map((s) => s.outcome),
      ['current', 'current'],
      'a second rekey has nothing to do',
    );
  });

  test('k1 dropped: the Schedules list, describe and a triggered run decodes and completes', async () => {
    const dropped = await cli(['keygen', '--drop', k1]);
    assert.equal(dropped.code, 0, dropped.stderr);
    assert.ok(!parseKeyFile(readFileSync(keysFile, 'utf8'), keysFile).byId.has(k1));
    const listed = await json<{ scheduleId: string; kind: string; domain: string }[]>(['schedule', 'list']);
    for (const id of [scheduleId, legacyId]) {
      const view = listed.find((s) => s.scheduleId === id);
      assert.deepEqual([view?.kind, view?.domain], ['export', domain], id);
    }
    const triggered = await cli(['schedule', 'trigger', scheduleId]);
    assert.equal(triggered.code, 0, triggered.stderr);
    let workflowId = '';
    await waitFor(
      async () => {
        const view = await json<{ recentActions: { workflowId: string }[] }>(['schedule', 'describe', scheduleId]);
        workflowId = view.recentActions[0]?.workflowId ?? '';
        return workflowId !== '';
      },
      { timeoutMs: 20_000, what: 'the triggered run' },
    );
    const client = new Client({ connection: env.connection, dataConverter: payloadEncryption(keysFile).dataConverter });
    const handle = client.workflow.getHandle(workflowId);
    await waitFor(async () => (await handle.describe()).status.name !== 'RUNNING', {
      timeoutMs: 30_000,
      what: `the triggered run ${workflowId} to close`,
    });
    const result = (await handle.result()) as StaticExportResult;
    assert.equal(result.domain, domain, 'the worker decoded the input the Schedule gave it');
  });
});
