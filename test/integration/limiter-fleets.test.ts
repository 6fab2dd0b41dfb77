// test-lane: cluster
// The rate limiter across fleets that come and go, some under Worker Deployment Versioning, on the
// production-shaped cluster (default settings): an unversioned fleet and a versioned one that leaves,
// two deployment names sharing a project with one torn down, a v1 -> v2 rollout with v1 stopped while
// the limiter is live, and a namespace an earlier release left with a limiter on a deployment version
// whose workers are gone. Every fleet serves one limiter queue (isolated per run: the real one is
// namespace-wide) and no deployment version may list it. Prints one JSON line of figures per arrangement.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { type EmulatorHandle, startEmulator } from '../../emulator';
import { type AgentRateLimiterInput, rateLimiterWorkflowId } from '../../src/shared/rate-limiter';
import { WorkflowType } from '../../src/shared/workflow-types';
import { agentStatusQuery } from '../../src/shared/agent-job';
import { workflowTracingSinks } from '../../src/worker/tracing';
import { type DeploymentVersion, becomeCurrentIfNone, workerDeploymentOptions } from '../../src/worker/versioning';
import {
  type Fleet,
  type FleetOptions,
  assertCreatesWithinLimit,
  deploymentTools,
  queueRouting,
  startFleet,
} from '../helpers/fleets';
import {
  type ClusterEnv,
  FAST_AGENT_POLLS,
  clusterSkipReason,
  createClusterEnv,
  uniqueTaskQueue,
  waitFor,
  workflowBundle,
} from '../helpers/temporal';

/** A job of a project whose limiter is served completes within this (the API's emulator answers in 200 ms). */
const SERVED_JOB_MS = 15_000;
/** A job that has not completed by then hangs (the bug: given up after 60 s). */
const HANG_MS = 60_000;

/** The workflow's result, or a failure once `ms` have passed without one. */
async function resultWithin<T>(handle: WorkflowHandle<() => Promise<T>>, ms = HANG_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${handle.workflowId} did not complete within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([handle.result(), hung]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The upgrade's promotion waits half a minute for the server (the legacy queue's add rate to decay): its
 * group runs beside the other, each on an emulator of its own.
 */
const groupsSideBySide = { skip: clusterSkipReason(), concurrency: true };

describe('the rate limiter while fleets come and go (cluster, default settings)', groupsSideBySide, () => {
  let env: ClusterEnv;
  const run = `${Date.now().toString(36)}-${process.pid}`;
  const limiterTaskQueue = uniqueTaskQueue('fleets-limiter');
  let seq = 0;

  before(async () => {
    env = await createClusterEnv();
  });
  after(async () => {
    await env?.teardown();
  });

  /** A worker of an earlier release's deployment version on `taskQueue`, as that release made one. */
  const earlierReleaseWorker = async (taskQueue: string, version: DeploymentVersion) =>
    Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowBundle: await workflowBundle(),
      sinks: workflowTracingSinks(undefined),
      ...workerDeploymentOptions(version, 'AUTO_UPGRADE'), // as the earlier release's limiter declared
    });

  /**
   * Fleets, jobs and checks for the tests of one group (a describe), on an emulator of the group's own
   * (a test resets it); the group's fleets and emulator are closed after it.
   */
  function fleetRig() {
    const rig = { emu: undefined as unknown as EmulatorHandle };
    const fleets: Fleet[] = [];
    before(async () => {
      rig.emu = await startEmulator({
        agentActiveMs: 200,
        retryAfterForm: 'none',
        rateLimit: { limit: 5, windowMs: 4_000 },
      });
    });
    after(async () => {
      for (const f of fleets) await f.close();
      await rig.emu?.close();
    });

    const fleet = async (options: Omit<FleetOptions, 'limiterTaskQueue' | 'adminApiUrl'>) => {
      const f = await startFleet(env, { limiterTaskQueue, adminApiUrl: rig.emu.url, ...options });
      fleets.push(f);
      return f;
    };
    /** A versioned fleet, once its version is current (the first version of a deployment makes itself current). */
    const versionedFleet = async (taskQueue: string, deploymentName: string, buildId: string, rateLimit?: string) => {
      const f = await fleet({ taskQueue, deployment: { deploymentName, buildId }, rateLimit });
      const tools = deploymentTools(env, deploymentName);
      await waitFor(
        async () => (await tools.describe())?.versionSummaries?.some((v) => v.deploymentVersion?.buildId === buildId),
        {
          timeoutMs: 30_000,
          intervalMs: 250,
          what: `${deploymentName}.${buildId} to be known`,
        },
      );
      return f;
    };
    const isCurrent = async (deploymentName: string, buildId: string) =>
      (await deploymentTools(env, deploymentName).describe())?.routingConfig?.currentDeploymentVersion?.buildId ===
      buildId;

    const startJob = (taskQueue: string, projectId: string) =>
      env.client.workflow.start(WorkflowType.agentJob, {
        taskQueue,
        workflowId: `limiter-fleets-${projectId}-${++seq}`,
        // Fast polls: a job's own polling (a 3 s floor by default) is not what these tests time.
        args: [{ projectId, prompt: `Job ${seq} of ${projectId}` }, FAST_AGENT_POLLS],
      });
    /** Runs one job to completion; its duration in ms. */
    const timedJob = async (taskQueue: string, projectId: string) => {
      const startedAt = Date.now();
      const result = await resultWithin(await startJob(taskQueue, projectId));
      assert.equal(result.status, 'completed');
      return Date.now() - startedAt;
    };
    /** The limiter's Worker Deployment Version, as the server records it ('' for none). */
    const limiterVersion = async (projectId: string) => {
      const info = (await env.client.workflow.getHandle(rateLimiterWorkflowId(projectId)).describe()).raw
        .workflowExecutionInfo?.versioningInfo;
      return info?.deploymentVersion?.deploymentName
        ? `${info.deploymentVersion.deploymentName}.${info.deploymentVersion.buildId}`
        : '';
    };
    /** The limiter queue is in no deployment: unpinned tasks there go to unversioned workers. */
    const assertLimiterQueueUnversioned = async () =>
      assert.equal(
        await queueRouting(env, limiterTaskQueue),
        undefined,
        'no deployment version lists the limiter queue',
      );
    return Object.assign(rig, {
      fleet,
      versionedFleet,
      isCurrent,
      startJob,
      timedJob,
      limiterVersion,
      assertLimiterQueueUnversioned,
    });
  }

  describe('fleets that come and go', { concurrency: 1 }, () => {
    const rig = fleetRig();
    const { fleet, versionedFleet, isCurrent, startJob, timedJob, limiterVersion, assertLimiterQueueUnversioned } = rig;

    test('an unversioned fleet keeps its projects served after a versioned fleet has come and gone', async () => {
      const project = `z-${run}`;
      const unversioned = await fleet({ taskQueue: uniqueTaskQueue('rq-u') });
      const first = await timedJob(unversioned.taskQueue, project);

      const deploymentName = `dv-${run}`;
      const versioned = await versionedFleet(uniqueTaskQueue('rq-v'), deploymentName, 'v1');
      await waitFor(() => isCurrent(deploymentName, 'v1'), {
        timeoutMs: 30_000,
        intervalMs: 250,
        what: 'dv.v1 current',
      });
      const other = await timedJob(versioned.taskQueue, `y-${run}`);
      const listed = await deploymentTools(env, deploymentName).versionTaskQueues('v1');
      assert.ok(listed.includes(versioned.taskQueue), `v1 lists its jobs queue: ${listed.join(', ')}`);
      assert.ok(!listed.includes(limiterTaskQueue), 'v1 does not list the limiter queue');
      await assertLimiterQueueUnversioned();
      await versioned.close();

      const after = await timedJob(unversioned.taskQueue, project);
      assert.ok(after < SERVED_JOB_MS, `the job after fleet dv left took ${after} ms`);
      assert.equal(await limiterVersion(project), '', "the project's limiter is on no deployment version");
      await unversioned.close();
      console.log(JSON.stringify({ arrangement: 'unversioned + dv, dv gone', jobMs: { first, other, after } }));
    });

    test('two deployment names share a project within its limit; one torn down, the other keeps it served', async () => {
      const project = `shared-${run}`;
      const [a, b] = [`da-${run}`, `db-${run}`];
      const fleetA = await versionedFleet(uniqueTaskQueue('rq-a'), a, 'v1', '5/4s');
      const fleetB = await versionedFleet(uniqueTaskQueue('rq-b'), b, 'v1', '5/4s');
      await waitFor(async () => (await isCurrent(a, 'v1')) && (await isCurrent(b, 'v1')), {
        timeoutMs: 30_000,
        intervalMs: 250,
        what: 'both deployments current',
      });
      rig.emu.reset();
      const burstStart = Date.now();
      const handles = await Promise.all(
        Array.from({ length: 14 }, (_, i) => startJob((i % 2 === 0 ? fleetA : fleetB).taskQueue, project)),
      );
      await Promise.all(handles.map((h) => resultWithin(h, 2 * HANG_MS)));
      const burstMs = Date.now() - burstStart;
      const most = assertCreatesWithinLimit(rig.emu, project, { count: 14, limit: 5, windowMs: 4_000 });
      await assertLimiterQueueUnversioned();

      await fleetB.close();
      const after = await timedJob(fleetA.taskQueue, project);
      assert.ok(after < SERVED_JOB_MS, `the job after deployment ${b} was torn down took ${after} ms`);
      await fleetA.close();
      console.log(
        JSON.stringify({
          arrangement: 'two deployment names, one torn down',
          burst: { jobs: 14, ms: burstMs, mostIn4s: most },
          afterMs: after,
        }),
      );
    });

    test('a v1 -> v2 rollout: v1 stops while the limiter is live, and v2 keeps the project served', async () => {
      const project = `rollout-${run}`;
      const deploymentName = `dr-${run}`;
      const taskQueue = uniqueTaskQueue('rq-r');
      const v1 = await versionedFleet(taskQueue, deploymentName, 'v1');
      await waitFor(() => isCurrent(deploymentName, 'v1'), {
        timeoutMs: 30_000,
        intervalMs: 250,
        what: 'v1 current',
      });
      const onV1 = await timedJob(taskQueue, project);
      await versionedFleet(taskQueue, deploymentName, 'v2');
      await waitFor(() => deploymentTools(env, deploymentName).setCurrent('v2'), {
        timeoutMs: 30_000,
        intervalMs: 500,
        what: 'v2 to become current (the README rollout step)',
      });
      const onV2 = await timedJob(taskQueue, project);
      await assertLimiterQueueUnversioned();
      // v1 runs nothing pinned any more (its only job completed): stopped now, with the limiter live.
      await v1.close();
      assert.equal(
        (await env.client.workflow.getHandle(rateLimiterWorkflowId(project)).describe()).status.name,
        'RUNNING',
      );
      const after = await timedJob(taskQueue, project);
      assert.ok(after < SERVED_JOB_MS, `the job after v1 stopped took ${after} ms`);
      assert.equal(await limiterVersion(project), '', "the project's limiter is on no deployment version");
      console.log(JSON.stringify({ arrangement: 'rollout v1 -> v2, v1 stopped', jobMs: { onV1, onV2, after } }));
    });

    test('a limiter an earlier release left on a deployment version whose workers are gone: the job says so and how to retire it, then completes', async () => {
      const project = `captured-${run}`;
      const legacyQueue = uniqueTaskQueue('legacy-limiter');
      const version = { deploymentName: `old-${run}`, buildId: 'v1' };
      // What an earlier release did: its versioned worker polled the limiter queue, and its version became
      // current, so the queue routes there; a limiter started on it carries that version (AUTO_UPGRADE).
      const old = await earlierReleaseWorker(legacyQueue, version);
      const oldRunning = old.run();
      let limiter: WorkflowHandle;
      try {
        await becomeCurrentIfNone(env.client, version, { timeoutMs: 30_000, intervalMs: 250 });
        limiter = await env.client.workflow.start(WorkflowType.agentRateLimiter, {
          taskQueue: legacyQueue,
          workflowId: rateLimiterWorkflowId(project),
          args: [{ projectId: project, limit: 100, windowMs: 10 * 60_000 } satisfies AgentRateLimiterInput],
        });
        await waitFor(async () => (await limiterVersion(project)) === `${version.deploymentName}.v1`, {
          timeoutMs: 30_000,
          what: 'the limiter to run on the old version',
        });
      } finally {
        if (old.getState() === 'RUNNING') old.shutdown();
        await oldRunning;
      }

      const f = await fleet({ taskQueue: uniqueTaskQueue('rq-new') });
      const startedAt = Date.now();
      const handle = await startJob(f.taskQueue, project);
      const waiting = await waitFor(
        async () => {
          const status = await handle.query(agentStatusQuery);
          return status.waitingFor?.includes(`deployment version ${version.deploymentName}.v1`) ? status : null;
        },
        { timeoutMs: 30_000, what: 'the job to say which deployment version its limiter waits for' },
      );
      const saidMs = Date.now() - startedAt;
      assert.equal(waiting.phase, 'waiting-for-permit');
      assert.match(
        waiting.waitingFor ?? '',
        new RegExp(`temporal workflow terminate --workflow-id ${limiter.workflowId}`),
      );
      await limiter.terminate('retired, as the job said');
      const result = await resultWithin(handle);
      const jobMs = Date.now() - startedAt;
      assert.ok(result.jobId);
      const started = await env.client.workflow.getHandle(rateLimiterWorkflowId(project)).describe();
      assert.equal(started.taskQueue, limiterTaskQueue, 'the next ask started the limiter on the limiter queue');
      assert.equal(await limiterVersion(project), '', 'on no deployment version');
      const after = await timedJob(f.taskQueue, project);
      await env.client.workflow
        .getHandle(limiter.workflowId)
        .terminate('test over')
        .catch(() => undefined);
      await f.close();
      console.log(
        JSON.stringify({
          arrangement: 'limiter left on a gone deployment version, retired by hand',
          statusSaidMs: saidMs,
          jobMs,
          nextJobMs: after,
          waitingFor: waiting.waitingFor,
        }),
      );
    });
  });

  describe('a deployment upgraded from a release that polled the limiter queue', () => {
    const { versionedFleet, startJob, limiterVersion } = fleetRig();

    test('a versioned deployment upgraded from a release that polled the limiter queue as its version: a limiter there is named, retired, replaced', async () => {
      const project = `upgraded-${run}`;
      const legacyQueue = uniqueTaskQueue('legacy-limiter');
      const taskQueue = uniqueTaskQueue('rq-up');
      const deploymentName = `up-${run}`;
      const tools = deploymentTools(env, deploymentName);
      // The earlier release's v1: its versioned workers poll the jobs queue and the limiter queue.
      const v1 = { deploymentName, buildId: 'v1' };
      const oldWorkers = await Promise.all([taskQueue, legacyQueue].map((queue) => earlierReleaseWorker(queue, v1)));
      const oldRunning = oldWorkers.map((w) => w.run());
      const stopOld = async () => {
        for (const w of oldWorkers) if (w.getState() === 'RUNNING') w.shutdown();
        await Promise.all(oldRunning);
      };
      let promoteMs: number;
      let v2: Fleet;
      try {
        await becomeCurrentIfNone(env.client, v1, { timeoutMs: 30_000, intervalMs: 250 });
        await env.client.workflow.start(WorkflowType.agentRateLimiter, {
          taskQueue: legacyQueue,
          workflowId: rateLimiterWorkflowId(project),
          args: [{ projectId: project, limit: 100, windowMs: 10 * 60_000 } satisfies AgentRateLimiterInput],
        });
        await waitFor(async () => (await limiterVersion(project)) === `${deploymentName}.v1`, {
          timeoutMs: 30_000,
          what: 'the limiter to run on v1',
        });
        // This release as v2, promoted as docs/operations.md says; then v1 stops.
        v2 = await versionedFleet(taskQueue, deploymentName, 'v2');
        const promotedAfter = Date.now();
        await waitFor(() => tools.setCurrent('v2'), { timeoutMs: 60_000, intervalMs: 500, what: 'v2 current' });
        promoteMs = Date.now() - promotedAfter;
      } finally {
        await stopOld();
      }
      const routedAfter = await queueRouting(env, legacyQueue);

      const startedAt = Date.now();
      const handle = await startJob(taskQueue, project);
      await waitFor(
        async () => (await handle.query(agentStatusQuery)).waitingFor?.includes('which this release does not serve'),
        { timeoutMs: 30_000, what: 'the job to name the limiter left on the old queue' },
      );
      await env.client.workflow.getHandle(rateLimiterWorkflowId(project)).terminate('retired, as the job said');
      const result = await resultWithin(handle);
      const jobMs = Date.now() - startedAt;
      assert.ok(result.jobId);
      const started = await env.client.workflow.getHandle(rateLimiterWorkflowId(project)).describe();
      assert.equal(started.taskQueue, limiterTaskQueue, 'the next ask started the limiter on the limiter queue');
      assert.equal(await limiterVersion(project), '');
      const status = await handle.query(agentStatusQuery);
      await env.client.workflow
        .getHandle(rateLimiterWorkflowId(project))
        .terminate('test over')
        .catch(() => undefined);
      await v2.close();
      console.log(
        JSON.stringify({
          arrangement: 'versioned deployment upgraded from a release that polled the limiter queue',
          promoteMs,
          legacyQueueRoutedAfterUpgrade: routedAfter ?? 'unversioned',
          jobMs,
          phase: status.phase,
        }),
      );
    });
  });
});
