// Fleets of the product's worker side by side in one test process, as separate `npm run worker`
// processes would run them (each on a connection of its own, optionally a Worker Deployment Version),
// and the deployment commands docs/operations.md documents, run through the Temporal CLI.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { NativeConnection } from '@temporalio/worker';
import { loadWorkerConfig } from '../../src/config';
import { noopMetrics } from '../../src/observability/metrics';
import { type DocsAdminWorker, createDocsAdminWorker } from '../../src/worker';
import type { DeploymentSetting } from '../../src/worker/versioning';
import { findTemporalCli } from '../../scripts/tools';
import { maxInAnyWindow } from '../../bench/user-path';
import type { EmulatorHandle } from '../../emulator';
import { workflowBundle } from './temporal';

const run = promisify(execFile);
const { EventType } = temporal.api.enums.v1;

export interface FleetOptions {
  taskQueue: string;
  /** The limiter task queue (isolated per test run: the real one is namespace-wide). */
  limiterTaskQueue: string;
  adminApiUrl: string;
  rateLimit?: string;
  deployment?: DeploymentSetting;
  workflowsPath?: string;
  /** KEEPER_SINKS_FILE of the fleet's worker. */
  sinksFile?: string;
  /** The fleet's PAYLOAD_ENCRYPTION_KEYS_FILE (unset: plain payloads). */
  payloadKeysFile?: string;
}

export interface Fleet {
  /** The fleet's jobs task queue. */
  taskQueue: string;
  worker: DocsAdminWorker;
  connection: NativeConnection;
  running: Promise<void>;
  /** Stops the fleet's workers (waiting for them) and closes its connection. */
  close(): Promise<void>;
}

/**
 * The API's limit held for `projectId` since the emulator's last reset: `count` jobs created, no answer of
 * 429, and at most `limit` creates inside any `windowMs`. Returns the most found inside one, a figure to print.
 */
export function assertCreatesWithinLimit(
  emu: EmulatorHandle,
  projectId: string,
  { count, limit, windowMs }: { count: number; limit: number; windowMs: number },
): number {
  const creates = emu
    .jobs()
    .filter((j) => j.projectId === projectId)
    .map((j) => Date.parse(j.createdAt));
  assert.equal(creates.length, count);
  assert.equal(emu.counters().calls.createAgentJob?.['429'] ?? 0, 0);
  const most = maxInAnyWindow(creates, windowMs);
  assert.ok(most <= limit, `${most} creates inside one ${windowMs / 1000} s window`);
  return most;
}

/** One fleet of the product's worker (jobs + limiter task queues), on a connection of its own, already running. */
export async function startFleet(env: TestWorkflowEnvironment, options: FleetOptions): Promise<Fleet> {
  const config = loadWorkerConfig({
    TEMPORAL_ADDRESS: env.address,
    TEMPORAL_NAMESPACE: env.namespace ?? 'default',
    TEMPORAL_TASK_QUEUE: options.taskQueue,
    ADMIN_API_URL: options.adminApiUrl,
    ADMIN_API_KEY: 'mint_fleet_test_key_0123456789',
    AGENT_RATE_LIMIT: options.rateLimit ?? '100/10s',
    METRICS_PORT: '0',
    ...(options.sinksFile ? { KEEPER_SINKS_FILE: options.sinksFile } : {}),
    ...(options.payloadKeysFile ? { PAYLOAD_ENCRYPTION_KEYS_FILE: options.payloadKeysFile } : {}),
  });
  const connection = await NativeConnection.connect({ address: env.address });
  const worker = await createDocsAdminWorker(config, {
    connection,
    client: env.client,
    workflowBundle: await workflowBundle(options.workflowsPath, { encrypted: Boolean(options.payloadKeysFile) }),
    metrics: noopMetrics,
    metricsListen: false,
    limiterTaskQueue: options.limiterTaskQueue,
    deployment: options.deployment,
  });
  const running = worker.run();
  let closed: Promise<void> | undefined;
  return {
    taskQueue: options.taskQueue,
    worker,
    connection,
    running,
    close: () =>
      (closed ??= (async () => {
        await worker.close().catch(() => undefined);
        await connection.close().catch(() => undefined);
      })()),
  };
}

/** The Temporal CLI against env's server and namespace. */
export function temporalCli(env: TestWorkflowEnvironment) {
  return (...args: string[]) =>
    run(
      findTemporalCli() ?? 'temporal',
      [...args, '--address', env.address, '--namespace', env.namespace ?? 'default'],
      { timeout: 20_000 },
    );
}

/** A worker deployment as the server has it, and the commands of docs/operations.md on it. */
export function deploymentTools(env: TestWorkflowEnvironment, deploymentName: string) {
  const cli = temporalCli(env);
  const namespace = env.namespace ?? 'default';
  return {
    cli,
    /** The deployment as the server has it (undefined until a worker of it has polled). */
    describe: async () =>
      (
        await env.client.workflowService
          .describeWorkerDeployment({ namespace, deploymentName })
          .catch((err: unknown) => {
            if ((err as { code?: number }).code === 5) return undefined;
            throw err;
          })
      )?.workerDeploymentInfo,
    /** The task queues a version lists (the server's record of what its workers polled). */
    versionTaskQueues: async (buildId: string) =>
      (
        await env.client.workflowService.describeWorkerDeploymentVersion({
          namespace,
          deploymentVersion: { deploymentName, buildId },
        })
      ).workerDeploymentVersionInfo?.taskQueueInfos?.map((q) => q.name ?? '') ?? [],
    /**
     * `set-current-version`; false while the server refuses it for "missing active task queues", did
     * not answer in time, or briefly could not find the deployment (a loaded server: seen once in CI
     * with v1 already current; the command is idempotent).
     */
    setCurrent: (buildId: string) =>
      cli(
        'worker',
        'deployment',
        'set-current-version',
        '--deployment-name',
        deploymentName,
        '--build-id',
        buildId,
        '--yes',
      ).then(
        () => true,
        (err: { stderr?: string }) => {
          if (/missing active task queues|context deadline exceeded|Worker Deployment not found/.test(err.stderr ?? ''))
            return false;
          throw err;
        },
      ),
    /**
     * A version's drainage status; '' while the server cannot tell (seen once in CI: a version being
     * drained was "not found" for a moment, while its deployment's queries were backed up).
     */
    drainage: async (buildId: string) => {
      try {
        const { stdout } = await cli(
          'worker',
          'deployment',
          'describe-version',
          '--deployment-name',
          deploymentName,
          '--build-id',
          buildId,
          '--output',
          'json',
        );
        return (
          (JSON.parse(stdout) as { drainageInfo?: { drainageStatus?: string } }).drainageInfo?.drainageStatus ?? ''
        );
      } catch (err) {
        if (/not found|buffer is full/i.test((err as { stderr?: string }).stderr ?? '')) return '';
        throw err;
      }
    },
  };
}

/** Build ids of the workers that completed each workflow task of a run ('unversioned' for none), and failed tasks. */
export async function workflowTasks(client: Client, handle: Pick<WorkflowHandle, 'workflowId'>, runId?: string) {
  const events = (await client.workflow.getHandle(handle.workflowId, runId).fetchHistory()).events ?? [];
  const builds = events.flatMap((e) => {
    const a = e.workflowTaskCompletedEventAttributes;
    return a ? [a.deploymentVersion?.buildId || a.workerDeploymentVersion || 'unversioned'] : [];
  });
  const failed = events
    .filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)
    .map((e) => e.workflowTaskFailedEventAttributes?.failure?.message ?? '');
  return { builds: [...new Set(builds)], failed, started: events[0]?.workflowExecutionStartedEventAttributes };
}

/** Where the server routes unpinned workflow tasks of `taskQueue` (undefined: to unversioned workers). */
export async function queueRouting(env: TestWorkflowEnvironment, taskQueue: string) {
  const described = await env.client.workflowService.describeTaskQueue({
    namespace: env.namespace ?? 'default',
    taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  const current = described.versioningInfo?.currentDeploymentVersion;
  return current?.deploymentName ? `${current.deploymentName}.${current.buildId}` : undefined;
}
