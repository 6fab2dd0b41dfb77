// The docs-admin worker: every workflow and activity on one task queue, configured from the
// environment (`npm run worker`, src/worker/process.ts), or started in-process by the demo, tests and
// benchmarks through createDocsAdminWorker.
//
// Metrics: one Prometheus endpoint (its port and host: docs/operations.md, "Running several workers"),
// serving the project's prom-client counters and the SDK's temporal_* metrics (src/observability/prometheus.ts),
// Core's exporter bound by installRuntime (src/observability/runtime.ts). Logs go through the SDK's Runtime
// logger (text or JSON lines), with the admin key redacted from every line.
import { Client, isGrpcServiceError } from '@temporalio/client';
import {
  bundleWorkflowCode,
  type NativeConnection,
  Runtime,
  Worker,
  type ActivityInterceptorsFactory,
  type Logger,
  type WorkerOptions,
  type WorkflowBundleOption,
} from '@temporalio/worker';
import { HEARTBEATING_ACTIVITIES, createActivities } from '../activities';
import { keepAttemptAlive } from '../activities/keep-alive';
import { NO_SINKS, SinksFile, describeSinks, type SinkSource } from '../activities/sinks-file';
import { AdminApiClient } from '../api/client';
import type { AdminApi } from '../api/types';
import type { WorkerConfig } from '../config';
import { bundleHostRules } from '../policies/bundle-hosts';
import type { MetricsRecorder } from '../observability/metrics';
import {
  createPrometheusMetrics,
  startMetricsServer,
  type MetricsServer,
  type PrometheusMetrics,
} from '../observability/prometheus';
import { connectNative } from '../connection';
import { DEFAULT_SHUTDOWN_GRACE_TIME_MS } from '../shared/defaults';
import { LIMITER_TASK_QUEUE } from '../shared/rate-limiter';
import { NEEDS_OPERATOR } from '../shared/agent-job';
import { SearchAttr } from '../shared/search-attributes';
import { WorkflowType } from '../shared/workflow-types';
import { installedRuntime } from '../observability/runtime';
import { activeTracing, type Tracing } from '../observability/tracing';
import { MetricsListenError, WorkerStartError, errorLine } from './errors';
import { UNVERSIONED, claimTaskQueue } from './task-queues';
import { WORKFLOW_INTERCEPTOR_MODULES, activityTracingInterceptors, workflowTracingSinks } from './tracing';
import { workerPayloads, type WorkerPayloads } from './payloads';
import {
  becomeCurrentIfNone,
  buildIdFromWorkflowCode,
  resolveDeploymentVersion,
  workerDeploymentOptions,
  workflowBundleCode,
  type DeploymentSetting,
  type DeploymentVersion,
} from './versioning';

/**
 * Pollers scale with the backlog, so every partition of the task queue is reached: a fixed few
 * pollers leave tasks in an unpolled partition until a long poll expires (~60 s stalls). They never
 * drop below the SDK's classic fixed count (10): scaled down to one after a quiet spell, a worker met
 * a burst with one poll at a time and took seconds to ramp up, while the burst's first jobs (and
 * every other project's) waited in the queue. Exported for the throughput benchmark's baseline
 * worker, which polls the same way.
 */
export const MIN_POLLERS = 10;
export const WORKER_POLLERS = {
  workflowTaskPollerBehavior: { type: 'autoscaling', minimum: MIN_POLLERS, initial: MIN_POLLERS },
  activityTaskPollerBehavior: { type: 'autoscaling', minimum: MIN_POLLERS, initial: MIN_POLLERS },
} as const satisfies Pick<WorkerOptions, 'workflowTaskPollerBehavior' | 'activityTaskPollerBehavior'>;

/**
 * Workflow task slots of the jobs' worker (the SDK's default is 40). An agent job's first task asks
 * the rate limiter from a local activity and holds its slot until the answer comes (a few hundred ms
 * on a loaded server): with 40 slots a burst of 300 jobs is admitted 40 at a time in many small
 * updates, and other projects' first tasks wait behind it; with 200 the burst's asks coalesce into a
 * few large updates. A slot waiting on a local activity costs no CPU.
 */
export const JOB_WORKFLOW_TASK_SLOTS = 200;

/**
 * Activity slots of the jobs' worker (the SDK's default is 100). A create under a permit handed on
 * ahead of time waits its last CALL_LEAD_MS (src/workflows/permits.ts) in its slot, so a window's
 * worth of creates is ready at the moment their slots free; with 200 slots those waits never hold
 * up exports or other projects' calls. The activities are HTTP calls: a slot costs little.
 */
export const JOB_ACTIVITY_SLOTS = 200;

// ---- the worker -----------------------------------------------------------------------------------

export interface DocsAdminWorkerOptions {
  /** Default: NativeConnection.connect to config.address (closed by close()). */
  connection?: NativeConnection;
  /** Client used by activities (limiter asks, use reports, send checkpoints). Default: one on the worker's connection. */
  client?: Client;
  /** Default: AdminApiClient on config.adminApiUrl with config.adminApiKey (closed by close()). */
  api?: AdminApi;
  /** Default: prom-client metrics (createPrometheusMetrics). */
  metrics?: MetricsRecorder;
  /** A pre-built bundle (tests bundle once per process). Default: workflowsPath src/workflows. */
  workflowBundle?: WorkflowBundleOption;
  /**
   * Where the Prometheus endpoint listens, overriding config.metricsPort/metricsHost; port 0 here
   * means "any free port" (tests). false disables it. Ignored when `metrics` is not prom-client's.
   */
  metricsListen?: { port: number; host?: string } | false;
  /** Core's Prometheus exporter to append to each scrape. Default: the one installRuntime bound. */
  sdkMetricsUrl?: string;
  /** Default: the installed runtime's logger. */
  logger?: Logger;
  /**
   * false: never serve the limiter task queue. By default it is served unless another worker of this
   * process already serves it (the SDK allows one worker per task queue in a process).
   */
  serveLimiter?: boolean;
  /** The limiter task queue to serve (default LIMITER_TASK_QUEUE; tests that share a server isolate theirs). */
  limiterTaskQueue?: string;
  /**
   * Worker Deployment Versioning (src/worker/versioning.ts): the deployment this worker belongs to and its
   * build id (default: derived from the workflow code). Undefined: unversioned.
   */
  deployment?: DeploymentSetting;
  /** Default: the tracer this process started (src/observability/tracing.ts), if any. */
  tracing?: Tracing;
  /** Extra Worker.create options (tuning in benchmarks). */
  workerOptions?: {
    maxConcurrentActivityTaskExecutions?: number;
    maxConcurrentWorkflowTaskExecutions?: number;
    maxCachedWorkflows?: number;
  };
}

/** An activity attempt this process is executing. */
export interface InFlightActivity {
  activityType: string;
  /** Undefined for an activity started on its own (not by a workflow). */
  workflowId?: string;
  attempt: number;
  /** When this attempt started here (ms since epoch). */
  startedAtMs: number;
}

export interface DocsAdminWorker {
  /** Serves TEMPORAL_TASK_QUEUE: the jobs' workflows and every activity. */
  worker: Worker;
  /**
   * Serves LIMITER_TASK_QUEUE, unversioned: the per-project rate limiter workflows of every fleet in the
   * namespace. Absent when options.serveLimiter is false or another worker on this connection serves it.
   */
  limiterWorker?: Worker;
  metrics: MetricsRecorder;
  /** The Worker Deployment Version the jobs' worker declares (undefined: unversioned; the limiter's never does). */
  deploymentVersion?: DeploymentVersion;
  /** The Prometheus endpoint (http://host:port/metrics), when one is running. */
  metricsUrl?: string;
  /** Runs both workers (remembered, so close() can wait for it). */
  run(): Promise<void>;
  /** Starts the graceful shutdown of both workers, if they run; run() resolves once they drained. */
  shutdown(): void;
  /** The activity attempts running now (what a stuck shutdown is waiting for). */
  inFlight(): InFlightActivity[];
  /** Shuts the worker down if it is running (waiting for it), then closes everything this function opened. */
  close(): Promise<void>;
}

function isPrometheus(metrics: MetricsRecorder): metrics is PrometheusMetrics {
  return 'registry' in metrics;
}

/**
 * The Prometheus endpoint, bound before anything else so that a port problem fails the start while
 * nothing holds the Temporal connection. When METRICS_PORT is unset and the default port is taken
 * (a second worker on the host), it serves on a free port instead and says so; an explicit port that
 * cannot be bound is a MetricsListenError.
 */
async function startMetricsEndpoint(
  config: WorkerConfig,
  options: DocsAdminWorkerOptions,
  metrics: MetricsRecorder,
  logger: Logger,
): Promise<MetricsServer | undefined> {
  const fromConfig = options.metricsListen === undefined;
  const listen = fromConfig
    ? config.metricsPort === 0
      ? false
      : { port: config.metricsPort, host: config.metricsHost }
    : options.metricsListen;
  if (!listen || !isPrometheus(metrics)) return undefined;
  const host = listen.host ?? '127.0.0.1';
  const start = (port: number) =>
    startMetricsServer({
      registry: metrics.registry,
      port,
      host,
      sdkMetricsUrl: options.sdkMetricsUrl ?? installedRuntime()?.sdkMetricsUrl,
    });
  try {
    return await start(listen.port);
  } catch (err) {
    if (!fromConfig) throw err;
    if (!(config.metricsPortIsDefault && (err as NodeJS.ErrnoException).code === 'EADDRINUSE')) {
      throw new MetricsListenError(host, listen.port, { cause: err });
    }
    const server = await start(0);
    logger.warn(
      `metrics port ${listen.port} (the default) is in use, probably by another worker: serving metrics on ${server.url} instead; set METRICS_PORT to choose the port`,
    );
    return server;
  }
}

/** Agent jobs waiting for an operator in the client's namespace (a visibility count). */
async function countParkedJobs(client: Client): Promise<number> {
  const query = `WorkflowType='${WorkflowType.agentJob}' AND ${SearchAttr.jobStatus.name}='${NEEDS_OPERATOR}' AND ExecutionStatus='Running'`;
  return (await client.workflow.count(query)).count;
}

const GRPC_NOT_FOUND = 5;

/**
 * Fails fast and clearly on a namespace the server does not have. Worker.create would find out too,
 * but later (after bundling), in a message of gRPC internals, and leaving worker threads behind that
 * keep the process alive.
 */
async function checkNamespace(client: Client, namespace: string, address: string): Promise<void> {
  try {
    await client.workflowService.describeNamespace({ namespace });
  } catch (err) {
    if (!(isGrpcServiceError(err) && err.code === GRPC_NOT_FOUND)) throw err;
    throw new WorkerStartError(
      `namespace "${namespace}" does not exist on the Temporal server at ${address}; set TEMPORAL_NAMESPACE or create it (temporal operator namespace create --namespace ${namespace})`,
      { cause: err },
    );
  }
}

/**
 * Lets go of a Worker that was created but never run. The SDK drops a Worker's hold on its
 * NativeConnection only at the end of run() (until then connection.close() throws IllegalStateError,
 * hiding whatever failed), and shutdown() before run() throws; so: run() and shutdown() at once. Core
 * stops polling straight away; a task it may already hold is finished or handed back as in any drain.
 */
async function releaseUnrunWorker(worker: Worker): Promise<void> {
  if (worker.getState() !== 'INITIALIZED') return;
  const running = worker.run();
  if (worker.getState() === 'RUNNING') worker.shutdown();
  await running.catch(() => undefined);
}

type Cleanup = () => Promise<void>;

/** The connections and the API client the options do not provide, opened here (and closed by `cleanups`). */
async function openDependencies(
  config: WorkerConfig,
  options: DocsAdminWorkerOptions,
  metrics: MetricsRecorder,
  logger: Logger,
  payloads: WorkerPayloads,
  cleanups: Cleanup[],
): Promise<{ connection: NativeConnection; client: Client; api: AdminApi }> {
  let connection = options.connection;
  if (!connection) {
    const owned = await connectNative(process.env, config.address, { log: (line) => logger.warn(line) });
    cleanups.push(() => owned.close());
    connection = owned;
  }
  // The activities' client shares the worker's connection (one per process, with its TLS and API key).
  const client = payloads.clientFor(options.client ?? new Client({ connection, namespace: config.namespace }));
  await checkNamespace(client, config.namespace, config.address);
  let api = options.api;
  if (!api) {
    const owned = new AdminApiClient({
      baseUrl: config.adminApiUrl,
      ...(config.adminApiKeyFile
        ? {
            apiKeyFile: config.adminApiKeyFile,
            onKeyFileChange: ({ file, rotated, problem }) =>
              rotated
                ? logger.info(`admin API key: a new key was read from ${file}`)
                : logger.warn(`admin API key: ${problem ?? `cannot read ${file}`}; keeping the last good key`),
          }
        : { apiKey: config.adminApiKey }),
      onCall: (event) => metrics.apiCall(event.operation, event.status, event.durationMs),
      logger: { warn: (message) => logger.warn(message) },
    });
    cleanups.push(() => owned.close());
    api = owned;
  }
  return { connection, client, api };
}

/**
 * One place counts retries for every activity (attempt > 1 means Temporal is retrying it), keeps
 * the attempts in flight, which a shutdown that overruns its deadline reports, and keeps them alive.
 */
function activityInterceptor(metrics: MetricsRecorder, active: Set<InFlightActivity>): ActivityInterceptorsFactory {
  return (ctx) => ({
    inbound: {
      execute: async (input, next) => {
        const { activityType, attempt, workflowExecution } = ctx.info;
        if (attempt > 1) metrics.activityRetry(activityType);
        const entry: InFlightActivity = {
          activityType,
          workflowId: workflowExecution?.workflowId,
          attempt,
          startedAtMs: Date.now(),
        };
        active.add(entry);
        const stopKeepAlive = keepAttemptAlive(ctx, HEARTBEATING_ACTIVITIES);
        try {
          return await next(input);
        } finally {
          stopKeepAlive();
          active.delete(entry);
        }
      },
    },
  });
}

/**
 * The sinks file (KEEPER_SINKS_FILE), read now so a missing or malformed one stops the start; its
 * changes are logged as they are picked up. Logs which sinks the worker holds: names and types only.
 */
function openSinks(config: WorkerConfig, logger: Logger): SinkSource {
  const source = config.sinksFile
    ? new SinksFile(config.sinksFile, (problem) => logger.warn(`keeper sinks: ${problem}`))
    : NO_SINKS;
  logger.info(describeSinks(source.current()));
  return source;
}

/** The handle over the created workers: run both, stop both, close what was opened. */
function workerHandle(
  parts: Pick<DocsAdminWorker, 'worker' | 'limiterWorker' | 'metrics' | 'metricsUrl' | 'deploymentVersion'>,
  active: Set<InFlightActivity>,
  cleanup: () => Promise<void>,
  onRun: () => void,
): DocsAdminWorker {
  const workers = parts.limiterWorker ? [parts.worker, parts.limiterWorker] : [parts.worker];
  const shutdown = () => {
    for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
  };
  let running: Promise<void> | undefined;
  return {
    ...parts,
    run() {
      // Either worker stopping (a fatal error, or a shutdown) stops the other.
      running ??= Promise.allSettled(workers.map((w) => w.run().finally(shutdown))).then((outcomes) => {
        const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
        if (failed) throw failed.reason;
      });
      onRun();
      return running;
    },
    shutdown,
    inFlight: () => [...active],
    async close() {
      shutdown();
      if (running) await running.catch(() => undefined);
      await cleanup();
    },
  };
}

/**
 * How long a limiter task waits on its worker's sticky queue before any limiter worker may take it: well
 * inside the 10 s an ask waits for its answer (the SDK's 10 s left asks unanswered when that worker was
 * gone). Limiter histories are short, so a replay elsewhere costs little.
 */
export const LIMITER_STICKY_TIMEOUT_MS = 3_000;

/**
 * The rate limiter workflows' worker, on their own queue, slots and workflow thread (see limiterTaskQueue).
 * Unversioned in every process, versioned fleets' too (why: docs/operations.md, "The rate limiter is never
 * versioned"), so any worker of any fleet may run it and its changes must replay (the replay corpus checks).
 */
async function createLimiterWorker(
  options: DocsAdminWorkerOptions,
  common: CommonWorkerOptions,
  limiter: Pick<WorkerOptions, 'taskQueue' | 'dataConverter'>,
  cleanups: Cleanup[],
): Promise<Worker | undefined> {
  const releaseLimiterQueue =
    options.serveLimiter === false
      ? undefined
      : claimTaskQueue(common.namespace, limiter.taskQueue, UNVERSIONED, common.connection);
  if (!releaseLimiterQueue) return undefined;
  cleanups.push(releaseLimiterQueue);
  const created = await Worker.create({
    ...common,
    ...limiter,
    stickyQueueScheduleToStartTimeout: LIMITER_STICKY_TIMEOUT_MS,
  });
  cleanups.push(() => releaseUnrunWorker(created));
  return created;
}

/** What both workers of a process share: the server, the code, polling, the drain and the spans' sink. */
type CommonWorkerOptions = Required<
  Pick<WorkerOptions, 'connection' | 'namespace' | 'workflowBundle' | 'shutdownGraceTime'>
> &
  Pick<WorkerOptions, 'sinks'> &
  typeof WORKER_POLLERS;

/** The version every Worker of this process declares, its Worker.create options, and its build id. */
function versionOf(setting: DeploymentSetting | undefined, workflowBundle: WorkflowBundleOption) {
  const deploymentVersion = resolveDeploymentVersion(setting, workflowBundle);
  const versioning = workerDeploymentOptions(deploymentVersion);
  // The build id the SDK registers each Worker under (it derives one from the code when unversioned).
  const buildId = deploymentVersion?.buildId ?? buildIdFromWorkflowCode(workflowBundleCode(workflowBundle));
  return { deploymentVersion, versioning, buildId };
}

/** Claims the jobs' task queue for this process (see task-queues.ts); throws when a worker of it serves it already. */
function claimJobsQueue(config: WorkerConfig, buildId: string): Cleanup {
  const release = claimTaskQueue(config.namespace, config.taskQueue, buildId);
  if (!release) {
    throw new Error(
      `task queue ${config.taskQueue} of namespace ${config.namespace} is already served by a worker of this process (one worker per task queue per process)`,
    );
  }
  return release;
}

/**
 * What run() starts on a versioned worker: a deployment's first version makes itself current (nothing
 * to roll out from); later ones wait for the operator. Stopped by the cleanups.
 */
function firstVersionCheck(
  client: Client,
  deploymentVersion: DeploymentVersion | undefined,
  logger: Logger,
  cleanups: Cleanup[],
): () => void {
  const versionCheck = new AbortController();
  cleanups.push(async () => versionCheck.abort());
  return () => {
    if (!deploymentVersion) return;
    becomeCurrentIfNone(client, deploymentVersion, { logger, signal: versionCheck.signal }).catch((err: unknown) =>
      logger.warn(`could not check the deployment's current version: ${errorLine(err)}`),
    );
  };
}

/**
 * The workflow code every worker of this process runs, bundled once, with the tracing interceptors and the
 * failure converter the payloads need (both run in the workflow sandbox). A bundle given in the options
 * must have the same.
 */
function bundleWorkflows(payloads: WorkerPayloads, logger: Logger): Promise<WorkflowBundleOption> {
  return bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
    failureConverterPath: payloads.failureConverterPath,
    logger,
  });
}

export async function createDocsAdminWorker(
  config: WorkerConfig,
  options: DocsAdminWorkerOptions = {},
): Promise<DocsAdminWorker> {
  // Undone in reverse order on failure and by close(): workers let go of the connection before it closes.
  const cleanups: Cleanup[] = [];
  const cleanup = async () => {
    for (const fn of cleanups.reverse()) await fn().catch(() => undefined);
    cleanups.length = 0;
  };
  try {
    const logger = options.logger ?? installedRuntime()?.logger ?? Runtime.instance().logger;
    const metrics = options.metrics ?? createPrometheusMetrics();

    const payloads = workerPayloads(config, logger);
    const keeperSinks = openSinks(config, logger);
    const stopCountingKeyErrors = payloads.onKeyError?.(() => metrics.payloadKeyError());
    if (stopCountingKeyErrors) cleanups.push(async () => stopCountingKeyErrors());
    const server = await startMetricsEndpoint(config, options, metrics, logger);
    if (server) cleanups.push(() => server.close());
    const { connection, client, api } = await openDependencies(config, options, metrics, logger, payloads, cleanups);
    if (isPrometheus(metrics)) metrics.watchParkedJobs(() => countParkedJobs(client));

    const limiterQueue = options.limiterTaskQueue ?? LIMITER_TASK_QUEUE;
    const active = new Set<InFlightActivity>();
    const workflowBundle = options.workflowBundle ?? (await bundleWorkflows(payloads, logger));
    const { deploymentVersion, versioning, buildId } = versionOf(options.deployment, workflowBundle);
    const tracing = options.tracing ?? activeTracing();
    const common: CommonWorkerOptions = {
      connection,
      namespace: config.namespace,
      workflowBundle,
      shutdownGraceTime: config.shutdownGraceTimeMs ?? DEFAULT_SHUTDOWN_GRACE_TIME_MS,
      ...WORKER_POLLERS,
      // Temporal's workflow sinks (spans out of the sandbox), not the keeper's bundle sinks above.
      sinks: workflowTracingSinks(tracing),
    };
    const activities = createActivities({
      api,
      metrics,
      temporal: client,
      agentRateLimit: config.agentRateLimit,
      limiterTaskQueue: limiterQueue,
      sinks: keeperSinks,
      bundleHosts: bundleHostRules(config.adminApiUrl, config.bundleAllowedHosts ?? []),
    });
    cleanups.push(claimJobsQueue(config, buildId));
    const worker = await Worker.create({
      ...common,
      taskQueue: config.taskQueue,
      activities,
      maxConcurrentWorkflowTaskExecutions: JOB_WORKFLOW_TASK_SLOTS,
      maxConcurrentLocalActivityExecutions: JOB_WORKFLOW_TASK_SLOTS,
      maxConcurrentActivityTaskExecutions: JOB_ACTIVITY_SLOTS,
      ...versioning,
      dataConverter: payloads.dataConverter,
      interceptors: { activity: [...activityTracingInterceptors(tracing), activityInterceptor(metrics, active)] },
      ...options.workerOptions,
    });
    cleanups.push(() => releaseUnrunWorker(worker));

    const limiter = { taskQueue: limiterQueue, dataConverter: payloads.limiterDataConverter };
    const limiterWorker = await createLimiterWorker(options, common, limiter, cleanups);
    const checkVersion = firstVersionCheck(client, deploymentVersion, logger, cleanups);
    return workerHandle(
      { worker, limiterWorker, metrics, metricsUrl: server?.url, deploymentVersion },
      active,
      cleanup,
      checkVersion,
    );
  } catch (err) {
    await cleanup();
    throw err;
  }
}
