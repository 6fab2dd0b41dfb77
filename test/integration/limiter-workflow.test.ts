// test-lane: parallel
// The agent rate limiter workflow on a dev server of its own, asked by update-with-start as workers ask:
// FIFO grants up to the limit, a permit handed on ahead of time, and continue-as-new (a long history, a
// window that never fills, a quiet limiter). Each test has its own project, task queue and worker, and
// most of their time is the limiter's own timers, so they run side by side.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { WithStartWorkflowOperation } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { LIMITER_HISTORY_EVENTS } from '../../src/activities/limiter-client';
import {
  type AgentRateLimiterInput,
  type RateLimiterStatus,
  admitPermitsUpdate,
  permitUsedSignal,
  rateLimiterStatusQuery,
  rateLimiterWorkflowId,
} from '../../src/shared/rate-limiter';
import { agentRateLimiter } from '../../src/workflows';
import { createDevEnv, runWorker, uniqueTaskQueue, waitFor } from '../helpers/temporal';

describe('the agent rate limiter workflow', { concurrency: true }, () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await createDevEnv();
  });
  after(async () => {
    await env?.teardown();
  });

  /**
   * A limiter of its own project on its own task queue, asked by update-with-start as workers ask, for
   * requesters that do not exist (the limiter logs an undeliverable grant and carries on). `request`
   * resolves with the limiter run it reached.
   */
  function signalledLimiter(name: string, limits: Omit<AgentRateLimiterInput, 'projectId'>) {
    const taskQueue = uniqueTaskQueue(name);
    const projectId = `${name}-${taskQueue.slice(-8)}`;
    const workflowId = rateLimiterWorkflowId(projectId);
    const requesterWorkflowId = `requester-${taskQueue}`;
    /** One ask: the limiter's answer, and the limiter run it reached. */
    const ask = async (requestKey: string) => {
      const startWorkflowOperation = new WithStartWorkflowOperation(agentRateLimiter, {
        taskQueue,
        workflowId,
        workflowIdConflictPolicy: 'USE_EXISTING',
        args: [{ projectId, ...limits }],
      });
      const [admission] = await env.client.workflow.executeUpdateWithStart(admitPermitsUpdate, {
        args: [[{ requesterWorkflowId, requestKey }]],
        startWorkflowOperation,
      });
      assert.ok(admission, `an answer for ${requestKey}`);
      return { admission, handle: await startWorkflowOperation.workflowHandle() };
    };
    const request = async (requestKey: string) => (await ask(requestKey)).handle;
    /** The status of the project's current limiter run, once `check` holds. */
    const statusWhen = (check: (status: RateLimiterStatus) => boolean, what: string) =>
      waitFor(
        async () => {
          const status = await env.client.workflow.getHandle(workflowId).query(rateLimiterStatusQuery);
          return check(status) ? status : null;
        },
        { what },
      );
    return { taskQueue, workflowId, requesterWorkflowId, ask, request, statusWhen };
  }

  test('the limiter grants FIFO up to the limit and never takes two permits for a repeated request', async () => {
    const { taskQueue, request, statusWhen } = signalledLimiter('limiter', { limit: 2, windowMs: 60_000 });
    await runWorker(env, { taskQueue }, async () => {
      const handle = await request('a');
      await request('a'); // a retried activity
      await request('b');
      await request('a');
      await request('c');
      await request('c');
      const status = await statusWhen((s) => s.granted === 2 && s.queued === 1, 'two grants and one queued request');
      assert.equal(status.inWindow, 2);
      assert.ok(status.nextFreeAt !== null);
      // Neither report arrived: both slots are held for their lease, and the window empties with the later.
      assert.ok(
        typeof status.windowEmptyAt === 'string' &&
          Date.parse(status.windowEmptyAt) >= Date.parse(status.asOf!) + 60_000,
      );
      assert.ok(Date.parse(status.windowEmptyAt) >= Date.parse(status.nextFreeAt));
      // The Web UI's current details say the same, and what the limiter waits for.
      const details = await waitFor(
        async () => {
          const { currentDetails } = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
          return currentDetails?.includes('| queued | 1 |') ? currentDetails : null;
        },
        { what: "the limiter's current details with one queued request" },
      );
      assert.match(details, /\| waiting for \| a slot of the window to free/);
      assert.match(details, /\| in the window \([^)]+\) \| 2 \|/);
      await handle.terminate('test finished');
    });
  });

  test('a repeated ask of a permit handed on ahead of time is answered with its not-before time', async () => {
    // Handed on up to 20 s ahead of a 40 s window's slot.
    const { taskQueue, requesterWorkflowId, ask, statusWhen } = signalledLimiter('handover', {
      limit: 1,
      windowMs: 40_000,
    });
    await runWorker(env, { taskQueue }, async () => {
      const { admission: first, handle } = await ask('a');
      assert.equal(first.granted, true);
      // 'a' was used 25 s ago: its slot frees in about 15 s, within reach, so 'b' is granted ahead of time.
      await handle.signal(permitUsedSignal, { requesterWorkflowId, requestKey: 'a', usedAtMs: Date.now() - 25_000 });
      const { admission: queued } = await ask('b');
      assert.equal(queued.granted, false);
      await statusWhen((s) => s.granted === 2, "b's grant ahead of time");
      // The job asks again (its recheck raced the grant signal): the answer is the same permit as the signal's.
      const { admission: again } = await ask('b');
      assert.equal(again.granted, true);
      assert.ok(again.notBeforeMs !== undefined && again.notBeforeMs > Date.now(), `not before ${again.notBeforeMs}`);
      assert.ok(again.useByMs !== undefined && again.useByMs > again.notBeforeMs, `use by ${again.useByMs}`);
    });
  });

  test('a limiter whose history grows long continues as new with its grants and queue, and keeps the limit', async () => {
    const { taskQueue, workflowId, request, statusWhen } = signalledLimiter('limiter-can', {
      limit: 3,
      windowMs: 60_000,
      maxHistoryEvents: 20,
    });
    await runWorker(env, { taskQueue }, async () => {
      const firstRunId = (await (await request('r0')).describe()).runId;
      for (let i = 1; i < 12; i++) {
        await request(`r${i}`);
        // One at a time, so each request is its own workflow task and the history grows.
        await statusWhen((s) => s.queued + s.inWindow > i, `request ${i} to be seen`);
      }
      const status = await statusWhen(
        (s) => s.inWindow === 3 && s.queued === 9,
        'three grants in the window and nine queued, across runs',
      );
      assert.equal(status.limit, 3);
      const latest = env.client.workflow.getHandle(workflowId);
      const description = await latest.describe();
      assert.notEqual(description.runId, firstRunId, 'the limiter continued as new');
      assert.ok(description.historyLength < 40, `the current run has ${description.historyLength} events`);
      await latest.terminate('test finished');
    });
  });

  /** Starts the limiter and asks `asks` times by update, as workers do; each is granted at once. */
  async function startAndAskByUpdate(
    taskQueue: string,
    workflowId: string,
    limits: Omit<AgentRateLimiterInput, 'projectId'>,
    asks: number,
  ) {
    const projectId = workflowId.slice(workflowId.indexOf(':') + 1);
    const first = await env.client.workflow.start(agentRateLimiter, {
      taskQueue,
      workflowId,
      args: [{ projectId, ...limits }],
    });
    for (let i = 0; i < asks; i++) {
      const [answer] = await first.executeUpdate(admitPermitsUpdate, {
        args: [[{ requesterWorkflowId: `requester-${i}`, requestKey: `r${i}` }]],
      });
      assert.equal(answer?.granted, true, `ask ${i} granted at once`);
    }
    return first;
  }

  test('a limiter whose asks are all granted at once (its window never fills) still continues as new', async () => {
    // The workers' path: asks by update, each granted by the handler, nothing ever queued.
    const limits = { limit: 100, windowMs: 60_000, maxHistoryEvents: 20 };
    const { taskQueue, workflowId, statusWhen } = signalledLimiter('limiter-can-idle', limits);
    await runWorker(env, { taskQueue }, async () => {
      const first = await startAndAskByUpdate(taskQueue, workflowId, limits, 12);
      const status = await statusWhen((s) => s.inWindow === 12, 'twelve grants in the window, across runs');
      assert.equal(status.queued, 0);
      const description = await env.client.workflow.getHandle(workflowId).describe();
      assert.notEqual(description.runId, first.firstExecutionRunId, 'the limiter continued as new');
      assert.ok(description.historyLength < 40, `the current run has ${description.historyLength} events`);
      await env.client.workflow.getHandle(workflowId).terminate('test finished');
    });
  });

  /** Asks `asks` times, then checks the limiter continues as new once quiet, carrying its grants. */
  async function expectQuietCompaction(name: string, limits: Omit<AgentRateLimiterInput, 'projectId'>, asks: number) {
    const { taskQueue, workflowId, statusWhen } = signalledLimiter(name, limits);
    await runWorker(env, { taskQueue }, async () => {
      const first = await startAndAskByUpdate(taskQueue, workflowId, limits, asks);
      const asked = await first.describe();
      assert.ok(asked.historyLength > 10, `${asked.historyLength} events after ${asks} asks`);
      assert.equal(asked.runId, first.firstExecutionRunId, 'the same run right after the asks (not quiet yet)');
      const moved = await waitFor(
        async () => {
          const latest = await env.client.workflow.getHandle(workflowId).describe();
          return latest.runId !== first.firstExecutionRunId ? latest : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 250, what: 'the quiet limiter to continue as new' },
      );
      assert.ok(moved.historyLength < 10, `the new run has ${moved.historyLength} events`);
      // Its grants came along: the window still counts them.
      const status = await statusWhen((s) => s.inWindow === asks, `the ${asks} grants carried into the new run`);
      assert.equal(status.queued, 0);
      await env.client.workflow.getHandle(workflowId).terminate('test finished');
    });
  }

  test('a quiet limiter with a fifth of its history budget continues as new at once, not at the next burst', async () => {
    // New worker processes replay every live limiter before answering: the next burst should meet a short history.
    await expectQuietCompaction('limiter-quiet', { limit: 100, windowMs: 600_000, maxHistoryEvents: 50 }, 3);
  });

  test("a quiet limiter with the workers' large history budget continues as new past 100 events", async () => {
    // The budget (LIMITER_HISTORY_EVENTS) holds a burst; a fifth of it would leave 400 events to replay.
    const limits = { limit: 100, windowMs: 600_000, maxHistoryEvents: LIMITER_HISTORY_EVENTS };
    await expectQuietCompaction('limiter-quiet-large', limits, 30);
  });
});
