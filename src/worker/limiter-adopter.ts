// Serving a foreign limiter task queue for a while (see LimiterQueueAdopter).
import {
  Worker,
  type Logger,
  type NativeConnection,
  type WorkerOptions,
  type WorkflowBundleOption,
} from '@temporalio/worker';
import { UNVERSIONED, claimTaskQueue } from './task-queues';
import { type DeploymentVersion, workerDeploymentOptions } from './versioning';

/**
 * How long a limiter's task waits on its worker's sticky queue before any limiter worker may take it:
 * well inside the 10 s an ask waits for its answer (the SDK's default, 10 s, left asks unanswered when
 * that worker was gone). Limiter histories are short, so a replay elsewhere costs little.
 */
export const LIMITER_STICKY_TIMEOUT_MS = 3_000;

/**
 * Serves a foreign limiter task queue for a few minutes: a limiter an older fleet left where no worker
 * of this release polls (`<queue>-limiter`, or `docs-admin-limiter` routed to a deployment version).
 * Served once, as that version if any, it answers its asks and moves itself onto our queue.
 */
export class LimiterQueueAdopter {
  private readonly adopted = new Map<string, Promise<void>>();
  private readonly workers = new Set<Worker>();

  constructor(
    private readonly options: {
      connection: NativeConnection;
      namespace: string;
      workflowBundle: WorkflowBundleOption;
      logger: Logger;
      own: string;
      dataConverter?: WorkerOptions['dataConverter'];
    },
  ) {}

  /** Serves `taskQueue` for `forMs`, as `version` (the one the server routes the limiter's tasks to) or unversioned. */
  adopt(taskQueue: string, version?: DeploymentVersion, forMs = 3 * 60_000): void {
    if (taskQueue === this.options.own && !version) return;
    const key = JSON.stringify([taskQueue, version?.deploymentName, version?.buildId]);
    if (this.adopted.has(key)) return;
    const { connection, namespace, workflowBundle, logger } = this.options;
    const release = claimTaskQueue(namespace, taskQueue, version?.buildId ?? UNVERSIONED, connection);
    if (!release) return; // a worker of this process serves it already
    const served = (async () => {
      const worker = await Worker.create({
        connection,
        namespace,
        taskQueue,
        workflowBundle,
        maxCachedWorkflows: 100,
        stickyQueueScheduleToStartTimeout: LIMITER_STICKY_TIMEOUT_MS,
        // The limiter declares no behaviour (src/workflows/versioning.ts): as a version, it is AUTO_UPGRADE.
        ...workerDeploymentOptions(version, 'AUTO_UPGRADE'),
        dataConverter: this.options.dataConverter,
      });
      this.workers.add(worker);
      logger.warn('serving a foreign limiter task queue for a while: a rate limiter there had no worker', {
        taskQueue,
        ...(version ? { asDeploymentVersion: `${version.deploymentName}.${version.buildId}` } : {}),
        forMs,
      });
      const timer = setTimeout(() => worker.shutdown(), forMs);
      try {
        await worker.run();
      } finally {
        clearTimeout(timer);
        this.workers.delete(worker);
      }
    })()
      .catch((err: unknown) =>
        logger.error('could not serve a foreign limiter task queue', { taskQueue, error: String(err) }),
      )
      .finally(() => {
        this.adopted.delete(key);
        void release();
      });
    this.adopted.set(key, served);
  }

  async close(): Promise<void> {
    for (const worker of this.workers) if (worker.getState() === 'RUNNING') worker.shutdown();
    await Promise.all([...this.adopted.values()]);
  }
}
