// test-lane: cluster
// The attacker's view: only a Temporal client, starting `bundleKeeper` by type name with plain JSON (as the
// contract invites other services to). Whatever sink the input names or carries, the worker runs, writes
// and connects only as its sinks file allows: an inline command, a command name the file lacks, webhooks
// to loopback and to the cloud metadata address, a file outside the allowed directories, and one reached
// through a symbolic link are each refused, named in the keeper's status, and nothing is exported.
import assert from 'node:assert/strict';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { EmulatorHandle } from '../../emulator';
import { type KeeperStatus, keeperStatusQuery } from '../../src/shared/bundle-keeper';
import { WorkflowType } from '../../src/shared/workflow-types';
import { failureOf } from '../helpers/failures';
import { type HookReceiver, startHookReceiver } from '../helpers/hook-receiver';
import { writeSinksFile } from '../helpers/sinks';
import {
  type DocsAdminStack,
  createE2eEnv,
  startDocsAdminStack,
  terminateAll,
  uniqueTaskQueue,
  waitFor,
} from '../helpers/temporal';

describe('an attacker with a Temporal client cannot run, write or connect through a keeper', () => {
  let env: TestWorkflowEnvironment;
  let stack: DocsAdminStack | undefined;
  let emu: EmulatorHandle;
  let hooks: HookReceiver;
  let allowed: string;
  let outside: string;
  const started: string[] = [];
  const taskQueue = uniqueTaskQueue('keeper-attacker');
  const run = `${Date.now().toString(36)}-${process.pid}`;

  before(async () => {
    env = await createE2eEnv();
    allowed = await fsp.mkdtemp(path.join(tmpdir(), 'attacker-allowed-'));
    outside = await fsp.mkdtemp(path.join(tmpdir(), 'attacker-outside-'));
    await fsp.writeFile(path.join(outside, 'victim.json'), 'UNTOUCHED');
    await fsp.symlink(path.join(outside, 'victim.json'), path.join(allowed, 'link.json'));
    hooks = await startHookReceiver();
    const sinksFile = await writeSinksFile(
      allowed,
      {
        // Sinks an owner might have got wrong: the worker still refuses each.
        'loopback-hook': {
          type: 'webhook',
          url: `${hooks.url}/steal`,
          allowHttp: true,
          domains: ['loopback.attacker.example.com'],
        },
        'metadata-hook': {
          type: 'webhook',
          url: 'http://169.254.169.254/latest/meta-data/',
          allowHttp: true,
          domains: ['metadata.attacker.example.com'],
        },
        'outside-file': {
          type: 'file',
          path: path.join(outside, 'victim.json'),
          domains: ['outside-file.attacker.example.com'],
        },
        'link-file': { type: 'file', path: path.join(allowed, 'link.json'), domains: ['symlink.attacker.example.com'] },
      },
      [allowed],
    );
    stack = await startDocsAdminStack(
      env,
      { exportQueuedMs: 100, exportDurationMs: 500 },
      {
        ADMIN_API_KEY: 'mint_attacker_test_key_0123456789',
        TEMPORAL_TASK_QUEUE: taskQueue,
        KEEPER_SINKS_FILE: sinksFile,
      },
    );
    emu = stack.emu;
  });

  after(async () => {
    await terminateAll(env.client, started);
    await stack?.close();
    await hooks?.close();
    await env?.teardown();
    for (const dir of [allowed, outside]) if (dir) await fsp.rm(dir, { recursive: true, force: true });
  });

  test(
    "every sink outside the owner's allowance is refused and named in the status",
    { timeout: 120_000 },
    async () => {
      const pwned = path.join(outside, 'pwned');
      const attacks: [string, unknown, RegExp][] = [
        [
          'inline-command',
          { type: 'command', command: `touch ${pwned}; cat "$ADMIN_API_KEY_FILE"` },
          /inline command sink is refused/,
        ],
        ['unknown-command', 'evil-command', /holds no sink "evil-command": add it under "sinks:"/],
        ['loopback', 'loopback-hook', /sink "loopback-hook": 127\.0\.0\.1 .*loopback.*allowPrivateHosts/],
        ['metadata', 'metadata-hook', /sink "metadata-hook": 169\.254\.169\.254 .*metadata.*allowPrivateHosts/],
        ['outside-file', 'outside-file', /sink "outside-file" .* refused: path .* is not under any of allowedDirs/],
        ['inline-file', { type: 'file', path: path.join(outside, 'victim.json') }, /inline file sink is refused/],
        ['symlink', 'link-file', /sink "link-file": .*link\.json is a symbolic link/],
      ];
      const handles = await Promise.all(
        attacks.map(async ([name, sink]) => {
          const workflowId = `attacker-${name}-${run}`;
          started.push(workflowId);
          // Plain JSON by type name: no client library, no validation on the way in.
          return env.client.workflow.start(WorkflowType.bundleKeeper, {
            taskQueue,
            workflowId,
            args: [{ domain: `${name}.attacker.example.com`, sink }],
          });
        }),
      );
      const statuses = await Promise.all(
        handles.map((handle, i) =>
          waitFor(
            async () => {
              const s: KeeperStatus = await handle.query(keeperStatusQuery);
              return s.sinkRefused ? s : null;
            },
            { timeoutMs: 60_000, what: `the ${attacks[i]![0]} keeper's refusal` },
          ),
        ),
      );
      statuses.forEach((s, i) => {
        const [name, , reason] = attacks[i]!;
        assert.match(s.sinkRefused!, reason, name);
        assert.equal(s.jobId, null, `${name}: nothing applied`);
        assert.equal(s.exportsDone, 0, `${name}: nothing exported`);
        assert.doesNotMatch(s.sinkRefused!, /ADMIN_API_KEY|touch/, `${name}: the input is not echoed`);
      });
      assert.equal(emu.counters().exportsStarted, 0, 'no export for a refused sink');
      assert.equal(hooks.hits(), 0, 'nothing connected to the loopback receiver');
      await assert.rejects(fsp.stat(pwned), 'the inline command never ran');
      assert.equal(await fsp.readFile(path.join(outside, 'victim.json'), 'utf8'), 'UNTOUCHED');
      assert.deepEqual((await fsp.readdir(outside)).sort(), ['victim.json']);
    },
  );

  test('no job runs under a rate limiter id, whose payloads the codec leaves plain', async () => {
    const exportsBefore = emu.counters().exportsStarted;
    const jobs: [string, unknown][] = [
      [WorkflowType.staticExport, { domain: 'plain.attacker.example.com' }],
      [WorkflowType.agentJob, { projectId: 'attacker', prompt: 'Publish the private roadmap' }],
      [WorkflowType.bundleKeeper, { domain: 'plain-keeper.attacker.example.com', sink: 'outside-file' }],
    ];
    for (const [type, input] of jobs) {
      const workflowId = `agent-rate-limiter:attacker-${type}-${run}`;
      started.push(workflowId);
      const handle = await env.client.workflow.start(type, { taskQueue, workflowId, args: [input] });
      const err = await failureOf(handle.result());
      assert.equal(err.type, 'InvalidInput', type);
      assert.match(err.message, /the project rate limiters' .*start this job under another id/, type);
    }
    assert.equal(emu.counters().exportsStarted, exportsBefore, 'no export started');
    assert.equal(emu.jobs().filter((j) => j.projectId === 'attacker').length, 0, 'no agent job created');
  });
});
