// test-lane: cluster
// The attacker's view of the limits the owner configured: only a Temporal client, sending plain JSON by
// type and update name. A project's rate limiter keeps the workers' AGENT_RATE_LIMIT (5 per 10 s here):
// a start outside sane bounds fails, an ask naming another window is refused naming both and lifts
// nothing, and a limiter started with another window is never used by the workers. A keeper for one
// domain naming the sink of another is refused in its status: nothing exported, nothing written.
import assert from 'node:assert/strict';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { EmulatorHandle } from '../../emulator';
import { agentStatusQuery } from '../../src/shared/agent-job';
import { type KeeperStatus, keeperStatusQuery } from '../../src/shared/bundle-keeper';
import {
  type AgentRateLimiterInput,
  type LimiterRequestContext,
  type PermitRequest,
  LIMITER_TASK_QUEUE,
  admitPermitsUpdate,
  rateLimiterStatusQuery,
  rateLimiterWorkflowId,
} from '../../src/shared/rate-limiter';
import { WorkflowType } from '../../src/shared/workflow-types';
import { failureOf } from '../helpers/failures';
import { appliedBundleUrl, writeSinksFile } from '../helpers/sinks';
import {
  type DocsAdminStack,
  createE2eEnv,
  startDocsAdminStack,
  terminateAll,
  uniqueTaskQueue,
  waitFor,
} from '../helpers/temporal';

const WINDOW = { limit: 5, windowMs: 10_000 };

describe("an attacker with a Temporal client cannot lift a limit or borrow another domain's sink", () => {
  let env: TestWorkflowEnvironment;
  let stack: DocsAdminStack | undefined;
  let emu: EmulatorHandle;
  let dir: string;
  const started: string[] = [];
  const taskQueue = uniqueTaskQueue('attacker-limits');
  const run = `${Date.now().toString(36)}-${process.pid}`;
  const domainA = `a-${run}.attacker-limits.example.com`;
  const domainB = `b-${run}.attacker-limits.example.com`;

  before(async () => {
    env = await createE2eEnv();
    dir = await fsp.mkdtemp(path.join(tmpdir(), 'attacker-limits-'));
    const sinksFile = await writeSinksFile(dir, {
      'site-a': { type: 'file', path: path.join(dir, 'a.json'), domains: [domainA] },
      // As a sinks file of the release before domains wrote it.
      'no-domains': { type: 'file', path: path.join(dir, 'legacy.json') },
    });
    stack = await startDocsAdminStack(
      env,
      { exportQueuedMs: 100, exportDurationMs: 300, agentActiveMs: 200, rateLimit: WINDOW },
      {
        ADMIN_API_KEY: 'mint_attacker_limits_key_0123456789',
        TEMPORAL_TASK_QUEUE: taskQueue,
        AGENT_RATE_LIMIT: '5/10s',
        KEEPER_SINKS_FILE: sinksFile,
      },
    );
    emu = stack.emu;
  });

  after(async () => {
    await terminateAll(env.client, started);
    await stack?.close();
    await env?.teardown();
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
  });

  /** An agent job of `projectId` through the worker, by type name (its asks carry the worker's 5/10s). */
  const startJob = (projectId: string, n: number) => {
    const workflowId = `attacker-limits-job-${projectId}-${n}`;
    started.push(workflowId);
    return env.client.workflow.start(WorkflowType.agentJob, {
      taskQueue,
      workflowId,
      args: [{ projectId, prompt: `Job ${n} of ${projectId}` }],
    });
  };
  const requests = (projectId: string, n: number): PermitRequest[] =>
    Array.from({ length: n }, (_, i) => ({ requesterWorkflowId: `attacker-${projectId}-${i}`, requestKey: 'k' }));

  /** The refusal of an ask: WorkflowUpdateFailedError whose cause is the typed failure. */
  async function refusalOf(ask: Promise<unknown>): Promise<ApplicationFailure> {
    const err = await ask.then(
      (answer) => assert.fail(`the ask should have been refused, got ${JSON.stringify(answer)}`),
      (e: unknown) => e,
    );
    assert.ok(err instanceof WorkflowUpdateFailedError, `expected WorkflowUpdateFailedError, got ${String(err)}`);
    assert.ok(err.cause instanceof ApplicationFailure, String(err.cause));
    return err.cause;
  }

  test('a start outside sane bounds fails before it grants anything', async () => {
    const projectId = `forged-start-${run}`;
    started.push(rateLimiterWorkflowId(projectId));
    const forged: AgentRateLimiterInput = { projectId, limit: 1e9, windowMs: 10_000, marginMs: -1e9 };
    const handle = await env.client.workflow.start(WorkflowType.agentRateLimiter, {
      taskQueue: LIMITER_TASK_QUEUE,
      workflowId: rateLimiterWorkflowId(projectId),
      args: [forged],
    });
    const err = await failureOf(handle.result());
    assert.equal(err.type, 'InvalidInput');
    assert.equal(err.nonRetryable, true);
    assert.match(err.message, /limit must be a whole number from 1 to 1000000/);
  });

  test("an ask naming another window is refused, naming both, and grants nothing beyond the workers' 5 per 10 s", async () => {
    const projectId = `foreign-window-${run}`;
    const limiter = env.client.workflow.getHandle(rateLimiterWorkflowId(projectId));
    started.push(limiter.workflowId);
    // The workers start the project's limiter with their AGENT_RATE_LIMIT.
    const job = await startJob(projectId, 1);
    assert.ok((await job.result()).jobId);
    const ask = (context?: LimiterRequestContext) =>
      limiter.executeUpdate(admitPermitsUpdate, {
        args: context ? [requests(projectId, 10), context] : [requests(projectId, 10)],
      });

    for (const [context, named] of [
      [
        { limit: 1e9, windowMs: 10_000 },
        /^.*refused the ask: asked for 1000000000\/10s \(limit must .*\), this limiter enforces 5\/10s/,
      ],
      [{ limit: 5, windowMs: 1_000 }, /refused the ask: asked for 5\/1s, this limiter enforces 5\/10s/],
      [{ limit: 5, windowMs: 3_600_000_000 }, /asked for 5\/1000h \(windowMs must .*\), this limiter enforces 5\/10s/],
    ] as const) {
      const refused = await refusalOf(ask(context));
      assert.equal(refused.type, 'RateWindowMismatch', JSON.stringify(context));
      assert.equal(refused.nonRetryable, true);
      assert.match(refused.message, named);
    }
    // By update-with-start too, whatever the start input says.
    const refused = await refusalOf(
      env.client.workflow.executeUpdateWithStart(admitPermitsUpdate, {
        args: [requests(projectId, 10), { limit: 1e9, windowMs: 10_000 }],
        startWorkflowOperation: new WithStartWorkflowOperation(WorkflowType.agentRateLimiter, {
          workflowId: limiter.workflowId,
          workflowIdConflictPolicy: 'USE_EXISTING',
          taskQueue: LIMITER_TASK_QUEUE,
          args: [{ projectId, limit: 1e9, windowMs: 10_000 } satisfies AgentRateLimiterInput],
        }),
      }),
    );
    assert.equal(refused.type, 'RateWindowMismatch');

    // The window is the workers' still; an ask naming none is answered under it: at most 5 in the window.
    const status = await limiter.query(rateLimiterStatusQuery);
    assert.deepEqual([status.limit, status.windowMs, status.queued], [5, 10_000, 0]);
    const answers = await ask();
    const granted = answers.filter((a) => a.granted).length;
    const after = await limiter.query(rateLimiterStatusQuery);
    assert.ok(granted <= 5 - status.inWindow, `granted ${granted} with ${status.inWindow} in the window`);
    assert.ok(after.inWindow <= 5, `in the window: ${after.inWindow}`);
    assert.equal(after.queued, 10 - granted);
    assert.deepEqual([after.limit, after.windowMs], [5, 10_000]);
  });

  test('a limiter started with another window is never used by the workers: the job names both until it is retired', async () => {
    const projectId = `foreign-limiter-${run}`;
    const workflowId = rateLimiterWorkflowId(projectId);
    started.push(workflowId);
    // Sane bounds, but not the workers' window.
    const foreign = await env.client.workflow.start(WorkflowType.agentRateLimiter, {
      taskQueue: LIMITER_TASK_QUEUE,
      workflowId,
      args: [{ projectId, limit: 1_000, windowMs: 10_000 } satisfies AgentRateLimiterInput],
    });
    const job = await startJob(projectId, 1);
    const waiting = await waitFor(
      async () => {
        const s = await job.query(agentStatusQuery);
        return s.waitingFor?.includes('refused the ask') ? s : null;
      },
      { timeoutMs: 30_000, what: "the job to say the limiter refused the worker's window" },
    );
    assert.match(waiting.waitingFor!, /asked for 5\/10s, this limiter enforces 1000\/10s/);
    assert.equal(emu.jobs().filter((j) => j.projectId === projectId).length, 0, 'nothing created under it');
    // Retired by its operator (docs/operations.md): the next ask starts the limiter with the workers' window.
    await foreign.terminate('test: a foreign limiter retired');
    assert.ok((await job.result()).jobId);
    const status = await env.client.workflow.getHandle(workflowId).query(rateLimiterStatusQuery);
    assert.deepEqual([status.limit, status.windowMs], [5, 10_000]);
  });

  test("a keeper for one domain naming another domain's sink is refused: nothing exported or written", async () => {
    const keeper = async (domain: string, sink: string) => {
      const workflowId = `attacker-limits-keeper-${domain}-${sink}`;
      started.push(workflowId);
      return env.client.workflow.start(WorkflowType.bundleKeeper, { taskQueue, workflowId, args: [{ domain, sink }] });
    };
    const refusal = async (handle: Awaited<ReturnType<typeof keeper>>, what: string) =>
      waitFor(
        async () => {
          const s: KeeperStatus = await handle.query(keeperStatusQuery);
          return s.sinkRefused ? s : null;
        },
        { timeoutMs: 60_000, what },
      );
    const borrowed = await refusal(await keeper(domainB, 'site-a'), "the keeper of B's refusal of A's sink");
    assert.match(borrowed.sinkRefused!, new RegExp(`sink "site-a" does not serve ${domainB.replace(/\./g, '\\.')}`));
    const legacy = await refusal(await keeper(domainB, 'no-domains'), 'the refusal of a sink without domains');
    assert.match(legacy.sinkRefused!, /sink "no-domains" .* refused: it lists no domains: add "domains: \[/);
    for (const s of [borrowed, legacy]) {
      assert.equal(s.jobId, null, 'nothing applied');
      assert.equal(s.exportsDone, 0, 'nothing exported');
    }
    assert.equal(emu.exports().filter((e) => e.domain === domainB).length, 0, 'no export for B');
    assert.equal(await appliedBundleUrl(path.join(dir, 'a.json')), undefined, "A's deployment untouched");
    await assert.rejects(fsp.stat(path.join(dir, 'legacy.json')));

    // The sink's own domain: applied (the refusal above is the domain's, not the sink's).
    const own = await keeper(domainA, 'site-a');
    const applied = await waitFor(
      async () => {
        const s: KeeperStatus = await own.query(keeperStatusQuery);
        return s.jobId ? s : null;
      },
      { timeoutMs: 60_000, what: "A's keeper to apply through its sink" },
    );
    assert.equal(await appliedBundleUrl(path.join(dir, 'a.json')), applied.bundleUrl);
  });
});
