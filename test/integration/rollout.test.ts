// test-lane: parallel
// A rollout on a real server with Worker Deployment Versioning: v1 workers run a keeper and agent jobs;
// v2 workers start with changed workflow code (test/rollout/v2-workflows: agentJob changed
// incompatibly, the keeper behind patched()); v2 becomes current through the documented CLI command; the
// in-flight v1 agent jobs finish on v1, new ones run on v2, the keeper moves to v2 and continues as new
// there; no workflow task fails; the rate limiter runs unversioned and no version lists its queue; v1 drains
// and its workers stop while the limiter is live, and the next job completes at once. Prints which
// version ran each execution.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import { type EmulatorHandle, startEmulator } from '../../emulator';
import { type AgentJobOptions, jobIdUpdate } from '../../src/shared/agent-job';
import { WorkflowType } from '../../src/shared/workflow-types';
import { keeperStatusQuery } from '../../src/shared/bundle-keeper';
import { rateLimiterWorkflowId } from '../../src/shared/rate-limiter';
import { type Fleet, deploymentTools, startFleet, workflowTasks } from '../helpers/fleets';
import { writeSinksFile } from '../helpers/sinks';
import { type DevEnv, createDevEnv, uniqueTaskQueue, waitFor } from '../helpers/temporal';

const V2_WORKFLOWS = path.resolve(__dirname, '../rollout/v2-workflows');
const FAST: AgentJobOptions = { poll: { floorMs: 100, fraction: 0.5, capMs: 400 } };

describe('rolling out a new worker version', () => {
  let env: DevEnv;
  let emu: EmulatorHandle;
  let dir: string;
  const deploymentName = `docs-admin-rollout-${process.pid}`;
  const taskQueue = uniqueTaskQueue('rollout');
  const limiterTaskQueue = `${taskQueue}-limiter`;
  const fleets: Fleet[] = [];
  let sinksFile: string;

  before(async () => {
    // Drainage is computed from visibility after a grace period (3 min by default): seconds here.
    env = await createDevEnv({
      dynamicConfig: [
        'matching.wv.VersionDrainageStatusVisibilityGracePeriod="1s"',
        'matching.wv.VersionDrainageStatusRefreshInterval="1s"',
      ],
    });
    emu = await startEmulator({ agentActiveMs: 300, exportQueuedMs: 200, exportDurationMs: 800, bundleTtlMs: 6_000 });
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollout-'));
    sinksFile = await writeSinksFile(dir, {
      'rollout-config': { type: 'file', path: path.join(dir, 'docs.json'), domains: ['rollout.example.com'] },
    });
  });

  after(async () => {
    for (const f of fleets) await f.close();
    await emu?.close();
    await env?.teardown();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** One fleet of the product's worker (jobs + limiter task queues), on its own connection, as build `buildId`. */
  async function fleet(buildId: string, workflowsPath?: string) {
    const entry = await startFleet(env, {
      taskQueue,
      limiterTaskQueue,
      adminApiUrl: emu.url,
      deployment: { deploymentName, buildId },
      workflowsPath,
      sinksFile,
    });
    fleets.push(entry);
    return entry;
  }
  const deployment = () => deploymentTools(env, deploymentName);
  const describeDeployment = () => deployment().describe();
  const drainage = (buildId: string) => deployment().drainage(buildId);
  const tasks = (handle: WorkflowHandle, runId?: string) => workflowTasks(env.client, handle, runId);

  test(
    'in-flight v1 jobs finish on v1, new ones and the keeper run on v2, v1 drains',
    { timeout: 150_000 },
    async () => {
      const startedAt = Date.now();
      const v1 = await fleet('v1');
      // The first version of a deployment makes itself current (becomeCurrentIfNone).
      await waitFor(
        async () => (await describeDeployment())?.routingConfig?.currentDeploymentVersion?.buildId === 'v1',
        {
          timeoutMs: 30_000,
          what: 'v1 to become current by itself',
          intervalMs: 250, // each check queries the deployment's workflow
        },
      );

      const keeper = await env.client.workflow.start(WorkflowType.bundleKeeper, {
        taskQueue,
        workflowId: `keeper-${taskQueue}`,
        args: [
          {
            domain: 'rollout.example.com',
            sink: 'rollout-config',
            continueAsNewAfterCycles: 1,
          },
        ],
      });
      await waitFor(async () => (await keeper.query(keeperStatusQuery)).jobId, {
        timeoutMs: 30_000,
        what: 'the keeper to apply its first bundle',
      });

      // Long agent jobs, in flight across the rollout.
      emu.configure({ agentActiveMs: 8_000 });
      const startJob = (name: string) =>
        env.client.workflow.start(WorkflowType.agentJob, {
          taskQueue,
          workflowId: `${name}-${taskQueue}`,
          args: [{ projectId: `rollout-${process.pid}`, prompt: `Rollout job ${name}` }, FAST],
        });
      const inFlight = [await startJob('v1-job-a'), await startJob('v1-job-b')];
      for (const h of inFlight) await h.executeUpdate(jobIdUpdate);

      // v2 starts beside it; it does not make itself current while v1 is.
      await fleet('v2', V2_WORKFLOWS);
      await waitFor(
        async () => (await describeDeployment())?.versionSummaries?.some((v) => v.deploymentVersion?.buildId === 'v2'),
        {
          timeoutMs: 30_000,
          what: 'the server to know v2',
          intervalMs: 250, // each check queries the deployment's workflow
        },
      );
      assert.equal((await describeDeployment())?.routingConfig?.currentDeploymentVersion?.buildId, 'v1');

      // The rollout, as docs/operations.md documents it. The server refuses while v2 has not yet polled every task
      // queue v1 serves (they would become unversioned): the command is repeated until it has.
      await waitFor(() => deployment().setCurrent('v2'), {
        timeoutMs: 30_000,
        intervalMs: 500,
        what: 'v2 to serve every task queue of v1 and become current',
      });
      const promotedAt = Date.now();
      emu.configure({ agentActiveMs: 300 });
      const fresh = [await startJob('v2-job-a'), await startJob('v2-job-b')];

      for (const h of [...inFlight, ...fresh]) assert.equal((await h.result()).status, 'completed');

      // The keeper continues as new (each cycle) and runs on v2: a run that started after the promotion.
      const keeperRun = await waitFor(
        async () => {
          const latest = env.client.workflow.getHandle(keeper.workflowId);
          const d = await latest.describe();
          if (d.startTime.getTime() < promotedAt) return null;
          const t = await tasks(latest, d.runId);
          return t.builds.length > 0 && t.builds.every((b) => b === 'v2') ? { runId: d.runId, ...t } : null;
        },
        { timeoutMs: 60_000, what: 'the keeper to continue as new on v2' },
      );

      const report: string[] = [];
      for (const h of inFlight) {
        const t = await tasks(h);
        report.push(`${h.workflowId}: ${t.builds.join(', ')}`);
        assert.deepEqual(t.builds, ['v1'], `${h.workflowId} started on v1 and stayed there (pinned)`);
        assert.deepEqual(t.failed, []);
      }
      for (const h of fresh) {
        const t = await tasks(h);
        report.push(`${h.workflowId}: ${t.builds.join(', ')}`);
        assert.deepEqual(t.builds, ['v2'], `${h.workflowId} started after the promotion runs on v2`);
        assert.deepEqual(t.failed, []);
      }
      // Every run of the keeper's chain: v1 before the promotion, v2 after, never a failed task.
      const keeperRuns: string[] = [];
      let runId: string | undefined = keeperRun.runId;
      while (runId) {
        const t = await tasks(keeper, runId);
        assert.deepEqual(t.failed, [], `keeper run ${runId}: no failed workflow task (no nondeterminism)`);
        keeperRuns.unshift(t.builds.join('+'));
        runId = t.started?.continuedExecutionRunId || undefined;
      }
      report.push(`${keeper.workflowId}: runs ${keeperRuns.join(' -> ')}`);
      assert.equal(keeperRuns[0], 'v1');
      assert.equal(keeperRuns.at(-1), 'v2');
      // The v2 keeper took the patched path: its run records the patch marker.
      const latestEvents =
        (await env.client.workflow.getHandle(keeper.workflowId, keeperRun.runId).fetchHistory()).events ?? [];
      assert.ok(
        latestEvents.some((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch'),
        'the v2 keeper run took the patched() path',
      );

      // The project's rate limiter runs unversioned on the limiter queue, which both versions' workers poll
      // unversioned: no version lists that queue, so the limiter never waits for one version's workers.
      const limiter = env.client.workflow.getHandle(rateLimiterWorkflowId(`rollout-${process.pid}`));
      const limiterRun = await tasks(limiter);
      report.push(`${limiter.workflowId}: ${limiterRun.builds.join(' then ')}`);
      assert.deepEqual(limiterRun.failed, [], 'no failed limiter workflow task');
      assert.deepEqual(limiterRun.builds, ['unversioned']);
      for (const buildId of ['v1', 'v2'])
        assert.ok(
          !(await deployment().versionTaskQueues(buildId)).includes(limiterTaskQueue),
          `${buildId} lists no limiter queue`,
        );

      // v1 drains (nothing pinned to it is open), then its workers stop while the project's limiter is live.
      // Once a second: each check is a CLI run and a query to the version's workflow.
      const drained = await waitFor(
        async () => ((await drainage('v1')).toUpperCase().endsWith('DRAINED') ? 'drained' : null),
        { timeoutMs: 60_000, intervalMs: 1_000, what: 'v1 to drain' },
      );
      assert.equal((await startJob('v2-job-c').then((h) => h.result())).status, 'completed');
      await v1.close();
      assert.equal((await limiter.describe()).status.name, 'RUNNING', 'the limiter is live as v1 stops');
      const afterV1 = Date.now();
      assert.equal((await startJob('v2-job-d').then((h) => h.result())).status, 'completed');
      const afterV1Ms = Date.now() - afterV1;
      assert.ok(afterV1Ms < 15_000, `a job after v1 stopped took ${afterV1Ms} ms`);
      report.push(
        `v1 ${drained}, its workers stopped; a job of the live limiter's project then took ${afterV1Ms} ms; current version: ${(await describeDeployment())?.routingConfig?.currentDeploymentVersion?.buildId}`,
      );
      console.log(`rollout (${((Date.now() - startedAt) / 1000).toFixed(1)} s):\n  ${report.join('\n  ')}`);
      await env.client.workflow.getHandle(keeper.workflowId).terminate('test over');
    },
  );
});
