// test-lane: cluster
// The rate limiter on the arrangements users have, on the production-shaped cluster (default server
// settings): a fleet that moves to another task queue, a limiter an older fleet left on a queue nobody
// serves (retired by hand), two fleets on different task queues sharing projects, and a changed
// AGENT_RATE_LIMIT (applied by the next limiter, not the running one). Jobs
// start by workflow type name with plain JSON, as another service starts them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { NativeConnection } from '@temporalio/worker';
import { type EmulatorHandle, startEmulator } from '../../emulator';
import {
  LIMITER_TASK_QUEUE,
  rateLimiterStatusQuery,
  rateLimiterWorkflowId,
  type AgentRateLimiterInput,
} from '../../src/shared/rate-limiter';
import { WorkflowType } from '../../src/shared/workflow-types';
import { agentStatusQuery } from '../../src/shared/agent-job';
import type { DocsAdminWorker } from '../../src/worker';
import { assertCreatesWithinLimit } from '../helpers/fleets';
import {
  type ClusterEnv,
  FAST_AGENT_POLLS,
  clusterSkipReason,
  createClusterEnv,
  startDocsAdminWorker,
  uniqueTaskQueue,
  waitFor,
} from '../helpers/temporal';

const KEY = 'mint_limiter_arrangements_key_0123';

/**
 * The two tests whose job waits for a limiter that does not answer (10 s an ask) run beside the others:
 * two groups, each on an emulator of its own (a test resets it).
 */
const groupsSideBySide = { skip: clusterSkipReason(), concurrency: true };

describe('the agent rate limiter on any arrangement (cluster, default settings)', groupsSideBySide, () => {
  let env: ClusterEnv;
  const run = Date.now().toString(36);
  let seq = 0;

  before(async () => {
    env = await createClusterEnv();
  });
  after(async () => {
    await env?.teardown();
  });

  /**
   * The fleets of one group of tests (a describe), on an emulator and a connection of the group's own (a
   * process holds one worker per task queue and connection, and both groups' fleets serve the limiter
   * queue); closed after the group.
   */
  function fleetRig() {
    const rig = {
      emu: undefined as unknown as EmulatorHandle,
      connection: undefined as unknown as NativeConnection,
      fleets: [] as DocsAdminWorker[],
    };
    before(async () => {
      rig.emu = await startEmulator({
        agentActiveMs: 200,
        retryAfterForm: 'none',
        rateLimit: { limit: 5, windowMs: 4_000 },
      });
      rig.connection = await NativeConnection.connect({ address: env.address });
    });
    after(async () => {
      for (const f of rig.fleets) await f.close();
      await rig.connection?.close();
      await rig.emu?.close();
    });

    /** A fleet (one worker process's workers) on its own task queue, with its own AGENT_RATE_LIMIT. */
    async function fleet(taskQueue: string, rateLimit: string, serveLimiter = true): Promise<DocsAdminWorker> {
      const vars = {
        ADMIN_API_URL: rig.emu.url,
        ADMIN_API_KEY: KEY,
        TEMPORAL_TASK_QUEUE: taskQueue,
        AGENT_RATE_LIMIT: rateLimit,
      };
      // One process holds both fleets here, and the SDK allows one worker per task queue in a process:
      // the second leaves the limiter queue to the first (in production each fleet's processes serve it).
      const worker = await startDocsAdminWorker(env, vars, { serveLimiter, connection: rig.connection });
      rig.fleets.push(worker);
      return worker;
    }
    return Object.assign(rig, { fleet });
  }

  const startJob = (taskQueue: string, projectId: string) =>
    env.client.workflow.start(WorkflowType.agentJob, {
      taskQueue,
      workflowId: `limiter-arrangement-${projectId}-${++seq}`,
      // Fast polls: a job's own polling (a 3 s floor by default) is not what these tests wait for.
      args: [{ projectId, prompt: `Job ${seq} of ${projectId}` }, FAST_AGENT_POLLS],
    });

  /** The job's status once it says its limiter did not answer. */
  const untilLimiterSilenceReported = (handle: WorkflowHandle, timeoutMs: number) =>
    waitFor(
      async () => {
        const status = await handle.query(agentStatusQuery);
        return status.waitingFor?.includes('did not answer') ? status : null;
      },
      { timeoutMs, what: 'the job to say the limiter does not answer' },
    );

  describe('fleets sharing the limiter', { concurrency: 1 }, () => {
    const rig = fleetRig();
    const { fleet } = rig;

    test('a fleet that moves to another task queue finds the project limiter served: its job completes', async () => {
      const projectId = `rename-${run}`;
      const before = await fleet(uniqueTaskQueue('fleet-a'), '100/10s');
      await startJob(before.worker.options.taskQueue, projectId).then((h) => h.result());
      await before.close();

      const after = await fleet(uniqueTaskQueue('fleet-b'), '100/10s');
      const started = Date.now();
      await startJob(after.worker.options.taskQueue, projectId).then((h) => h.result());
      assert.ok(Date.now() - started < 30_000, `the job after the move took ${Date.now() - started} ms`);
      const limiter = await env.client.workflow.getHandle(rateLimiterWorkflowId(projectId)).describe();
      assert.equal(limiter.taskQueue, LIMITER_TASK_QUEUE);
      await after.close();
    });

    test('two fleets on different task queues sharing a project never exceed the API limit together', async () => {
      const projectId = `two-fleets-${run}`;
      const [a, b] = [
        await fleet(uniqueTaskQueue('staging'), '5/4s'),
        await fleet(uniqueTaskQueue('production'), '5/4s', false),
      ];
      rig.emu.reset();
      const handles = await Promise.all(
        Array.from({ length: 14 }, (_, i) => startJob((i % 2 === 0 ? a : b).worker.options.taskQueue, projectId)),
      );
      await Promise.all(handles.map((h) => h.result()));
      assertCreatesWithinLimit(rig.emu, projectId, { count: 14, limit: 5, windowMs: 4_000 });
      await Promise.all([a.close(), b.close()]);
    });

    test("a changed AGENT_RATE_LIMIT: the running limiter keeps its window, the new fleet's job names both, the next limiter takes the new one", async () => {
      const projectId = `changed-limit-${run}`;
      const old = await fleet(uniqueTaskQueue('old-limit'), '100/10s');
      await startJob(old.worker.options.taskQueue, projectId).then((h) => h.result());
      const limiter = env.client.workflow.getHandle(rateLimiterWorkflowId(projectId));
      assert.equal((await limiter.query(rateLimiterStatusQuery)).limit, 100);
      await old.close();

      const changed = await fleet(uniqueTaskQueue('new-limit'), '3/10s');
      const job = await startJob(changed.worker.options.taskQueue, projectId);
      await waitFor(
        async () =>
          (await job.query(agentStatusQuery)).waitingFor?.includes('asked for 3/10s, this limiter enforces 100/10s'),
        { timeoutMs: 30_000, what: 'the job to name both windows' },
      );
      assert.equal((await limiter.query(rateLimiterStatusQuery)).limit, 100, 'no ask changes a running limiter');
      // As docs/operations.md says: retire the running limiter; the job's next ask starts it with 3/10s.
      await limiter.terminate('AGENT_RATE_LIMIT changed');
      assert.ok((await job.result()).jobId);
      const status = await env.client.workflow
        .getHandle(rateLimiterWorkflowId(projectId))
        .query(rateLimiterStatusQuery);
      assert.deepEqual([status.limit, status.windowMs], [3, 10_000]);
      await changed.close();
    });
  });

  describe('a limiter that does not answer: the job names it and the remedy', { concurrency: 1 }, () => {
    const rig = fleetRig();
    const { fleet } = rig;

    test('a limiter left on a task queue nobody serves: the job names it and the remedy, and completes once it is retired', async () => {
      const projectId = `stranded-${run}`;
      const oldQueue = `${uniqueTaskQueue('old-fleet')}-limiter`;
      // What an older fleet left behind: the project's limiter on that fleet's own limiter queue.
      const stranded = await env.client.workflow.start(WorkflowType.agentRateLimiter, {
        taskQueue: oldQueue,
        workflowId: rateLimiterWorkflowId(projectId),
        args: [{ projectId, limit: 100, windowMs: 10_000 } satisfies AgentRateLimiterInput],
      });
      const f = await fleet(uniqueTaskQueue('fleet-new'), '100/10s');
      const handle = await startJob(f.worker.options.taskQueue, projectId);
      const waiting = await untilLimiterSilenceReported(handle, 30_000);
      assert.equal(waiting.phase, 'waiting-for-permit');
      assert.match(waiting.waitingFor!, new RegExp(`"${oldQueue}", which this release does not serve`));
      assert.match(
        waiting.waitingFor!,
        new RegExp(`temporal workflow terminate --workflow-id ${rateLimiterWorkflowId(projectId)}`),
      );
      await stranded.terminate('retired, as the job said');
      const result = await handle.result();
      assert.ok(result.jobId);
      const limiter = await env.client.workflow.getHandle(rateLimiterWorkflowId(projectId)).describe();
      assert.equal(limiter.taskQueue, LIMITER_TASK_QUEUE, 'the next ask started the limiter on the limiter task queue');
      await f.close();
    });

    test('a limiter whose workflow task a worker took and holds: the job says so, and completes once it is freed', async () => {
      const projectId = `held-${run}`;
      // A limiter queue of its own, so that no other file's worker takes the task first.
      const limiterQueue = `${uniqueTaskQueue('held')}-limiter`;
      const limiter = await env.client.workflow.start(WorkflowType.agentRateLimiter, {
        taskQueue: limiterQueue,
        workflowId: rateLimiterWorkflowId(projectId),
        args: [{ projectId, limit: 100, windowMs: 10_000 } satisfies AgentRateLimiterInput],
        workflowTaskTimeout: '90s',
      });
      // A worker that takes the limiter's first task and never completes it (one that hangs, or died).
      const taken = await env.client.withDeadline(Date.now() + 30_000, () =>
        env.client.workflowService.pollWorkflowTaskQueue({
          namespace: env.client.options.namespace,
          taskQueue: { name: limiterQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
          identity: 'a hung worker',
        }),
      );
      assert.equal(taken.workflowExecution?.workflowId, rateLimiterWorkflowId(projectId));

      const vars = {
        ADMIN_API_URL: rig.emu.url,
        ADMIN_API_KEY: KEY,
        TEMPORAL_TASK_QUEUE: uniqueTaskQueue('fleet-held'),
      };
      const f = await startDocsAdminWorker(env, vars, { limiterTaskQueue: limiterQueue, connection: rig.connection });
      rig.fleets.push(f);
      const handle = await startJob(f.worker.options.taskQueue, projectId);
      const waiting = await untilLimiterSilenceReported(handle, 40_000);
      assert.match(waiting.waitingFor!, /a worker took its workflow task \d+ s ago and has not completed it/);
      assert.match(waiting.waitingFor!, /gives it to another worker 90 s after it was taken/);
      // Freed (here by ending that run): the job's next ask starts a new limiter and is answered.
      await limiter.terminate('test: the held run is given up');
      const result = await handle.result();
      assert.ok(result.jobId);
      await f.close();
    });
  });
});
