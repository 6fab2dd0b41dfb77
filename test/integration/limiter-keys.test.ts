// test-lane: cluster
// Two fleets of one namespace with different payload keys share the project rate limiters (issue 52),
// on the production-shaped cluster: fleet 1 (key k1, its own jobs queue) runs an agent job for a
// project; then fleet 2 (key k2, its own jobs queue) runs one for the same project with fleet 1
// stopped, and again with fleet 1 running. Each of fleet 2's jobs completes within 30 s of fleet 2's
// start, the API never answers 429, each job's payloads are encrypted with its own fleet's key (read
// raw from the history: encryption-key-id) and the limiter's are plain. For a fresh project id, for
// one reused by every run (a limiter a previous run left is served), and for a limiter an earlier
// release left with its payloads encrypted with k1 (fleet 2 cannot decrypt it: it is replaced).
// Prints one JSON line of figures per arrangement. Fleets share one limiter queue, fixed for this
// file (the real one is namespace-wide), so a reused project meets the limiter of the previous run.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client, type WorkflowHandle } from '@temporalio/client';
import { type EmulatorHandle, startEmulator } from '../../emulator';
import { EncryptionCodec, KeyFile, generateKeyLine, payloadEncryption } from '../../src/codec';
import { type AgentRateLimiterInput, rateLimiterWorkflowId } from '../../src/shared/rate-limiter';
import { WorkflowType } from '../../src/shared/workflow-types';
import { agentStatusQuery } from '../../src/shared/agent-job';
import type { agentJob } from '../../src/workflows';
import { type Fleet, startFleet } from '../helpers/fleets';
import {
  type ClusterEnv,
  FAST_AGENT_POLLS,
  clusterSkipReason,
  createClusterEnv,
  uniqueTaskQueue,
} from '../helpers/temporal';
import { keyIdsIn } from '../../src/client/key-usage';

/** Fleet 2's job completes within this of fleet 2's start (the bar). */
const WITHIN_MS = 30_000;
const LIMITER_QUEUE = 'limiter-keys-test-limiter';
const REUSED_PROJECT = 'limiter-keys-reused';

describe('fleets with different payload keys share the rate limiters (cluster)', { skip: clusterSkipReason() }, () => {
  let env: ClusterEnv;
  let emu: EmulatorHandle;
  let dir: string;
  const run = `${Date.now().toString(36)}-${process.pid}`;
  const open: Fleet[] = [];
  let seq = 0;
  /** What this run started, terminated in after() if still running (a failed run leaves nothing waiting). */
  const leftovers: WorkflowHandle[] = [];
  const keys: Record<'k1' | 'k2', { file: string; id: string; client: Client }> = {} as never;

  const fleet = async (key: 'k1' | 'k2', taskQueue: string) => {
    const f = await startFleet(env, {
      taskQueue,
      limiterTaskQueue: LIMITER_QUEUE,
      adminApiUrl: emu.url,
      payloadKeysFile: keys[key].file,
    });
    open.push(f);
    return f;
  };
  /** Runs one agent job of `key`'s fleet to completion within `withinMs` of `fromMs`: its workflow id and duration. */
  const job = async (key: 'k1' | 'k2', taskQueue: string, projectId: string, fromMs = Date.now()) => {
    const handle: WorkflowHandle<typeof agentJob> = await keys[key].client.workflow.start(WorkflowType.agentJob, {
      taskQueue,
      workflowId: `limiter-keys-${run}-${++seq}`,
      // Fast polls: a job's own polling (a 3 s floor by default) is not what these tests time.
      args: [{ projectId, prompt: `job ${seq} of ${projectId}` }, FAST_AGENT_POLLS],
    });
    leftovers.push(handle);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          void handle
            .query(agentStatusQuery)
            .then((s) => s.waitingFor, String)
            .then((waiting) =>
              reject(new Error(`${handle.workflowId} did not complete within ${WITHIN_MS} ms, waiting for ${waiting}`)),
            ),
        Math.max(0, fromMs + WITHIN_MS - Date.now()),
      );
    });
    try {
      const result = (await Promise.race([handle.result(), late])) as { status: string };
      assert.equal(result.status, 'completed');
    } finally {
      clearTimeout(timer);
    }
    return { workflowId: handle.workflowId, ms: Date.now() - fromMs };
  };
  const keyIds = async (workflowId: string, runId?: string) => {
    const { history } = await env.client.workflowService.getWorkflowExecutionHistory({
      namespace: env.namespace,
      execution: { workflowId, runId },
    });
    return [...keyIdsIn(history)].sort();
  };
  const limiterRunId = async (projectId: string) =>
    (await env.client.workflow.getHandle(rateLimiterWorkflowId(projectId)).describe()).runId;
  const closeAll = async () => {
    for (const f of open.splice(0)) await f.close();
  };

  /** The issue's steps for one project: fleet 1's job; fleet 2's with fleet 1 stopped; fleet 2's with it running. */
  async function twoFleets(projectId: string, arrangement: string) {
    const q1 = uniqueTaskQueue('keys-f1');
    const q2 = uniqueTaskQueue('keys-f2');
    await fleet('k1', q1);
    const first = await job('k1', q1, projectId);
    const limiterRun = await limiterRunId(projectId);
    await closeAll();

    let started = Date.now();
    await fleet('k2', q2);
    const alone = await job('k2', q2, projectId, started);
    // The case: fleet 2 serves the limiter fleet 1 left running (it lives a window past its last grant).
    assert.equal(await limiterRunId(projectId), limiterRun, "fleet 2's job went through fleet 1's limiter run");
    await closeAll();

    await fleet('k1', q1);
    started = Date.now();
    await fleet('k2', q2);
    const beside = await job('k2', q2, projectId, started);
    const besideOwn = await job('k1', q1, projectId);
    await closeAll();

    for (const j of [first, besideOwn]) assert.deepEqual(await keyIds(j.workflowId), [keys.k1.id], j.workflowId);
    for (const j of [alone, beside]) assert.deepEqual(await keyIds(j.workflowId), [keys.k2.id], j.workflowId);
    assert.deepEqual(await keyIds(rateLimiterWorkflowId(projectId)), [], "the limiter's payloads are plain");
    assert.equal(emu.counters().calls.createAgentJob?.['429'] ?? 0, 0, 'no 429');
    console.log(JSON.stringify({ arrangement, fleet2AloneMs: alone.ms, fleet2BesideFleet1Ms: beside.ms }));
  }

  before(async () => {
    env = await createClusterEnv();
    emu = await startEmulator({ agentActiveMs: 200 });
    dir = mkdtempSync(path.join(os.tmpdir(), 'limiter-keys-'));
    for (const key of ['k1', 'k2'] as const) {
      const file = path.join(dir, key);
      const line = generateKeyLine();
      writeFileSync(file, `${line}\n`);
      const { dataConverter } = payloadEncryption(file);
      const client = new Client({ connection: env.connection, namespace: env.namespace, dataConverter });
      keys[key] = { file, id: line.split(' ')[0] as string, client };
    }
  });
  after(async () => {
    await closeAll();
    for (const handle of leftovers)
      await handle.terminate('limiter-keys test: left running by a failed run').catch(() => undefined);
    await emu?.close();
    await env?.teardown();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('a fresh project id', () => twoFleets(`keys-${run}`, 'fresh project'));

  test('a project id every run reuses (the limiter a previous run left, if still running)', () =>
    twoFleets(REUSED_PROJECT, 'reused project'));

  test('a limiter an earlier release left encrypted with k1 is replaced when fleet 2 cannot decrypt it', async () => {
    const projectId = `keys-old-${run}`;
    // What an earlier release's worker wrote: the limiter's input encrypted like every other payload.
    const k1 = new KeyFile(keys.k1.file);
    const encryptingAll = new EncryptionCodec({ keys: () => k1.keys(), source: 'k1' });
    const earlier = new Client({
      connection: env.connection,
      namespace: env.namespace,
      dataConverter: { payloadCodecs: [encryptingAll] },
    });
    const input: AgentRateLimiterInput = { projectId, limit: 100, windowMs: 10_000 };
    const old = await earlier.workflow.start(WorkflowType.agentRateLimiter, {
      taskQueue: LIMITER_QUEUE,
      workflowId: rateLimiterWorkflowId(projectId),
      args: [input],
    });
    leftovers.push(old);
    assert.deepEqual(await keyIds(old.workflowId, old.firstExecutionRunId), [keys.k1.id]);

    const q2 = uniqueTaskQueue('keys-f2');
    const started = Date.now();
    await fleet('k2', q2);
    const alone = await job('k2', q2, projectId, started);
    await closeAll();

    const oldRun = await env.client.workflow.getHandle(old.workflowId, old.firstExecutionRunId).describe();
    assert.equal(oldRun.status.name, 'TERMINATED', 'the undecodable limiter was replaced');
    assert.deepEqual(await keyIds(alone.workflowId), [keys.k2.id]);
    assert.deepEqual(await keyIds(rateLimiterWorkflowId(projectId)), [], 'the new limiter is plain');
    assert.equal(emu.counters().calls.createAgentJob?.['429'] ?? 0, 0, 'no 429');
    console.log(JSON.stringify({ arrangement: 'earlier release limiter under k1', fleet2AloneMs: alone.ms }));
  });
});
