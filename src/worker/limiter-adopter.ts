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
 * How long a limiter's task waits on its worker's sticky queue before any limiter worker may take it
 * (the SDK's default is 10 s). A job's ask waits at most 10 s for the limiter's answer: with the
 * default, a sticky task that never reached its worker (the server recorded it dispatched; seen under
 * load on the cluster) or whose worker was killed left the ask unanswered, and the job waited 5 s more
 * before asking again. Limiter histories are short (they continue as new when quiet), so replaying one
 * on another worker costs little.
 */
export const LIMITER_STICKY_TIMEOUT_MS = 3_000;

/**
 * Serves a foreign limiter task queue for a while. A limiter an older fleet left where no worker of
 * this release polls waits for workers that may be gone: on an older fleet's own queue
 * (`<queue>-limiter`), or on `docs-admin-limiter` listed in a Worker Deployment Version, where the
 * server hands its tasks only to workers of the version that queue routes to. Served once (as that
 * version, when there is one), it answers the waiting permit requests and continues as new onto our
 * queue, which no versioned worker polls; so the adopted queue is only needed for a few minutes.
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
