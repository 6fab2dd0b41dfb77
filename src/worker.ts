// The docs-admin worker: every workflow and activity on one task queue, configured from the
// environment (`npm run worker`), or started in-process by the demo, tests and benchmarks through
// createDocsAdminWorker.
//
// Metrics: one Prometheus endpoint (METRICS_PORT, default 9464, 127.0.0.1 unless METRICS_HOST; a
// free port when the default one is taken, so several workers run on one host). The project's metrics
// are prom-client counters (src/prometheus.ts); the SDK's temporal_* metrics come from Core's
// Prometheus exporter, bound by installRuntime to a private loopback port and appended to each
// scrape. Logs go through the SDK's Runtime logger (text or JSON lines), with the admin key
// redacted from every line.
import { Client, Connection, isGrpcServiceError } from '@temporalio/client';
import {
  bundleWorkflowCode,
  DefaultLogger,
  NativeConnection,
  Runtime,
  Worker,
  type LogEntry,
  type Logger,
  type WorkerOptions,
  type WorkflowBundleOption,
} from '@temporalio/worker';
import { createActivities } from './activities';
import { AdminApiClient } from './api/client';
import { redact } from './api/redact';
import type { AdminApi } from './api/types';
import { ConfigError, loadWorkerConfig, type LogLevelName, type WorkerConfig } from './config';
import type { MetricsRecorder } from './metrics';
import { createPrometheusMetrics, startMetricsServer, type MetricsServer, type PrometheusMetrics } from './prometheus';
import { TemporalUnreachableError, temporalConnectionOptions } from './client';
import { LIMITER_TASK_QUEUE } from './shared';
import { freeLoopbackPort } from './free-port';
import {
  type DeploymentSetting,
  type DeploymentVersion,
  DeploymentConfigError,
  becomeCurrentIfNone,
  buildIdFromWorkflowCode,
  deploymentFromEnv,
  resolveDeploymentVersion,
  workflowBundleCode,
  workerDeploymentOptions,
} from './versioning';

export const DEFAULT_SHUTDOWN_GRACE_TIME_MS = 30_000;

/**
 * Pollers scale with the backlog, so every partition of the task queue is reached: a fixed few
 * pollers leave tasks in an unpolled partition until a long poll expires (~60 s stalls). Exported for
 * the throughput benchmark's baseline worker, which polls the same way.
 */
export const WORKER_POLLERS = {
  workflowTaskPollerBehavior: { type: 'autoscaling' },
  activityTaskPollerBehavior: { type: 'autoscaling' },
} as const satisfies Pick<WorkerOptions, 'workflowTaskPollerBehavior' | 'activityTaskPollerBehavior'>;

/**
 * Workflow task slots of the jobs' worker (the SDK's default is 40). An agent job's first task asks
 * the rate limiter from a local activity and holds its slot until the answer comes (a few hundred ms
 * on a loaded server): with 40 slots a burst of 300 jobs is admitted 40 at a time in many small
 * updates, and other projects' first tasks wait behind it; with 200 the burst's asks coalesce into a
 * few large updates. A slot waiting on a local activity costs no CPU.
 */
export const JOB_WORKFLOW_TASK_SLOTS = 200;

// ---- runtime: logger + Core's metrics exporter ----------------------------------------------------

export interface InstallRuntimeOptions {
  logLevel?: LogLevelName;
  logFormat?: 'text' | 'json';
  /** Strings that must never appear in a log line (the admin key). */
  secrets?: readonly string[];
  /** Bind Core's Prometheus exporter on a private loopback port (default true). */
  sdkMetrics?: boolean;
  /** Where log lines go (default process.stderr). */
  write?: (line: string) => void;
  /** Signals on which the Runtime shuts down every running Worker (default SIGINT and SIGTERM). */
  shutdownSignals?: NodeJS.Signals[];
}

export interface InstalledRuntime {
  logger: Logger;
  /** Core's exporter (http://127.0.0.1:PORT/metrics), when sdkMetrics. */
  sdkMetricsUrl?: string;
}

let installed: InstalledRuntime | undefined;

function safeJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'bigint') return v.toString();
    if (v instanceof Error) return { name: v.name, message: v.message };
    return v;
  });
}

/**
 * The limiter worker serves workflows only, so the SDK warns at every start that it polls no activity
 * tasks. That is the design, not a problem: the line would only teach operators to ignore warnings.
 */
function isExpectedLimiterWarning(entry: LogEntry): boolean {
  const taskQueue = entry.meta?.taskQueue;
  return (
    entry.level === 'WARN' &&
    entry.message.startsWith('No activities registered') &&
    typeof taskQueue === 'string' &&
    taskQueue.endsWith('-limiter')
  );
}

/** A logger that writes one line per entry, text or JSON, never containing any of `secrets`. */
export function createLogger(options: Omit<InstallRuntimeOptions, 'sdkMetrics'> = {}): Logger {
  const secrets = options.secrets ?? [];
  const write = options.write ?? ((line: string) => void process.stderr.write(line));
  const format = options.logFormat ?? 'text';
  return new DefaultLogger(options.logLevel ?? 'INFO', (entry: LogEntry) => {
    if (isExpectedLimiterWarning(entry)) return;
    const time = new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString();
    const meta = entry.meta && Object.keys(entry.meta).length > 0 ? entry.meta : undefined;
    const line =
      format === 'json'
        ? safeJson({ time, level: entry.level, msg: entry.message, ...meta })
        : `${time} ${entry.level.padEnd(5)} ${entry.message}${meta ? ` ${safeJson(meta)}` : ''}`;
    write(`${redact(line, secrets)}\n`);
  });
}

/**
 * Installs the process-wide Temporal Runtime: the logger (Core's logs forwarded to it) and, unless
 * disabled, Core's Prometheus exporter on a free 127.0.0.1 port that createDocsAdminWorker appends to
 * its endpoint. Call once, before any connection; a second call returns the first result.
 */
export async function installRuntime(options: InstallRuntimeOptions = {}): Promise<InstalledRuntime> {
  if (installed) return installed;
  const logger = createLogger(options);
  let sdkMetricsUrl: string | undefined;
  let metrics: { prometheus: { bindAddress: string } } | undefined;
  if (options.sdkMetrics ?? true) {
    const port = await freeLoopbackPort();
    metrics = { prometheus: { bindAddress: `127.0.0.1:${port}` } };
    sdkMetricsUrl = `http://127.0.0.1:${port}/metrics`;
  }
  Runtime.install({
    logger,
    shutdownSignals: options.shutdownSignals ?? ['SIGINT', 'SIGTERM'],
    telemetryOptions: {
      logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} },
      ...(metrics ? { metrics } : {}),
    },
  });
  installed = { logger, sdkMetricsUrl };
  return installed;
}

// ---- the worker -----------------------------------------------------------------------------------

export interface DocsAdminWorkerOptions {
  /** Default: NativeConnection.connect to config.address (closed by close()). */
  connection?: NativeConnection;
  /** Client used by activities (rate limiter signal-with-start). Default: one on config.address (closed by close()). */
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
   * Worker Deployment Versioning (src/versioning.ts): the deployment this worker belongs to and its build
   * id (default: derived from the workflow code). Undefined: unversioned.
   */
  deployment?: DeploymentSetting;
  /** Extra Worker.create options (tuning in benchmarks). */
  workerOptions?: { maxConcurrentActivityTaskExecutions?: number; maxConcurrentWorkflowTaskExecutions?: number; maxCachedWorkflows?: number };
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
  /** Serves LIMITER_TASK_QUEUE: the per-project rate limiter workflows of every fleet in the namespace. */
  /** Absent when options.serveLimiter is false or another worker of this process serves that queue. */
  limiterWorker?: Worker;
  metrics: MetricsRecorder;
  /** The Worker Deployment Version every worker of this process declares (undefined: unversioned). */
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

/** A failed start whose message says what to fix, on one line. */
export class WorkerStartError extends Error {
  override readonly name: string = 'WorkerStartError';
}

/** The Prometheus endpoint could not listen where METRICS_PORT / METRICS_HOST say. */
export class MetricsListenError extends WorkerStartError {
  override readonly name = 'MetricsListenError';
  constructor(
    readonly host: string,
    readonly port: number,
    options: { cause: unknown },
  ) {
    const code = (options.cause as NodeJS.ErrnoException).code;
    const why =
      code === 'EADDRINUSE'
        ? 'is already in use (another worker on this host?); choose another METRICS_PORT, 0 to disable metrics, or unset it to use a free port'
        : code === 'EACCES'
          ? 'needs privileges (a port below 1024); choose another METRICS_PORT'
          : code === 'EADDRNOTAVAIL'
            ? 'is not an address of this host; check METRICS_HOST'
            : `cannot be bound (${(options.cause as Error).message})`;
    super(`METRICS_PORT=${port}: metrics endpoint ${host}:${port} ${why}`, options);
  }
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
  const listen = fromConfig ? (config.metricsPort === 0 ? false : { port: config.metricsPort, host: config.metricsHost }) : options.metricsListen;
  if (!listen || !isPrometheus(metrics)) return undefined;
  const host = listen.host ?? '127.0.0.1';
  const start = (port: number) =>
    startMetricsServer({ registry: metrics.registry, port, host, sdkMetricsUrl: options.sdkMetricsUrl ?? installed?.sdkMetricsUrl });
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

/**
 * The task queues a Worker of this process serves, by namespace and build id. The SDK allows one Worker
 * per task queue and build id in a process (versions side by side are fine), and a Worker.create it
 * refuses leaves that Worker's workflow threads running (SDK 1.24), which keeps the process alive after
 * the error: so ask here before creating one. Returns the release function, or undefined when taken.
 */
const servedInProcess = new Set<string>();
function claimTaskQueue(namespace: string, taskQueue: string, buildId: string): (() => Promise<void>) | undefined {
  const key = JSON.stringify([namespace, taskQueue, buildId]);
  if (servedInProcess.has(key)) return undefined;
  servedInProcess.add(key);
  return async () => void servedInProcess.delete(key);
}

export async function createDocsAdminWorker(config: WorkerConfig, options: DocsAdminWorkerOptions = {}): Promise<DocsAdminWorker> {
  // Undone in reverse order on failure and by close(): workers let go of the connection before it closes.
  const cleanups: (() => Promise<void>)[] = [];
  const cleanup = async () => {
    for (const fn of cleanups.reverse()) await fn().catch(() => undefined);
    cleanups.length = 0;
  };
  try {
    const logger = options.logger ?? installed?.logger ?? Runtime.instance().logger;
    const metrics = options.metrics ?? createPrometheusMetrics();

    const server = await startMetricsEndpoint(config, options, metrics, logger);
    if (server) cleanups.push(() => server.close());

    let connection = options.connection;
    if (!connection) {
      const owned = await NativeConnection.connect({ address: config.address });
      cleanups.push(() => owned.close());
      connection = owned;
    }
    let client = options.client;
    if (!client) {
      const clientConnection = await Connection.connect({ address: config.address });
      cleanups.push(() => clientConnection.close());
      client = new Client({ connection: clientConnection, namespace: config.namespace });
    }
    await checkNamespace(client, config.namespace, config.address);
    let api = options.api;
    if (!api) {
      const owned = new AdminApiClient({
        baseUrl: config.adminApiUrl,
        apiKey: config.adminApiKey,
        onCall: (event) => metrics.apiCall(event.operation, event.status, event.durationMs),
        logger: { warn: (message) => logger.warn(message) },
      });
      cleanups.push(() => owned.close());
      api = owned;
    }

    const limiterQueue = options.limiterTaskQueue ?? LIMITER_TASK_QUEUE;
    const active = new Set<InFlightActivity>();
    // Bundled once for every worker of this process.
    const workflowBundle = options.workflowBundle ?? (await bundleWorkflowCode({ workflowsPath: require.resolve('./workflows'), logger }));
    const deploymentVersion = resolveDeploymentVersion(options.deployment, workflowBundle);
    const versioning = workerDeploymentOptions(deploymentVersion);
    // The build id the SDK registers each Worker under (it derives one from the code when unversioned).
    const buildId = deploymentVersion?.buildId ?? buildIdFromWorkflowCode(workflowBundleCode(workflowBundle));
    const adopter = new LimiterQueueAdopter({ connection, namespace: config.namespace, workflowBundle, logger, own: limiterQueue, versioning, buildId });
    cleanups.push(() => adopter.close());
    const activities = createActivities({
      api,
      metrics,
      temporal: client,
      agentRateLimit: config.agentRateLimit,
      limiterTaskQueue: limiterQueue,
      adoptLimiterTaskQueue: (taskQueue) => adopter.adopt(taskQueue),
    });
    const releaseQueue = claimTaskQueue(config.namespace, config.taskQueue, buildId);
    if (!releaseQueue) {
      throw new Error(`task queue ${config.taskQueue} of namespace ${config.namespace} is already served by a worker of this process (one worker per task queue per process)`);
    }
    cleanups.push(releaseQueue);
    const worker = await Worker.create({
      connection,
      namespace: config.namespace,
      taskQueue: config.taskQueue,
      workflowBundle,
      activities,
      shutdownGraceTime: config.shutdownGraceTimeMs ?? DEFAULT_SHUTDOWN_GRACE_TIME_MS,
      ...WORKER_POLLERS,
      maxConcurrentWorkflowTaskExecutions: JOB_WORKFLOW_TASK_SLOTS,
      maxConcurrentLocalActivityExecutions: JOB_WORKFLOW_TASK_SLOTS,
      ...versioning,
      interceptors: {
        // One place counts retries for every activity (attempt > 1 means Temporal is retrying it) and
        // keeps the attempts in flight, which a shutdown that overruns its deadline reports.
        activity: [
          (ctx) => ({
            inbound: {
              execute: async (input, next) => {
                const { activityType, attempt, workflowExecution } = ctx.info;
                if (attempt > 1) metrics.activityRetry(activityType);
                const entry: InFlightActivity = { activityType, workflowId: workflowExecution?.workflowId, attempt, startedAtMs: Date.now() };
                active.add(entry);
                try {
                  return await next(input);
                } finally {
                  active.delete(entry);
                }
              },
            },
          }),
        ],
      },
      ...options.workerOptions,
    });
    cleanups.push(() => releaseUnrunWorker(worker));

    // The rate limiter workflows on their own queue, slots and workflow thread (see limiterTaskQueue).
    const releaseLimiterQueue = options.serveLimiter === false ? undefined : claimTaskQueue(config.namespace, limiterQueue, buildId);
    let limiterWorker: Worker | undefined;
    if (releaseLimiterQueue) {
      cleanups.push(releaseLimiterQueue);
      const created = await Worker.create({
        connection,
        namespace: config.namespace,
        taskQueue: limiterQueue,
        workflowBundle,
        ...WORKER_POLLERS,
        shutdownGraceTime: config.shutdownGraceTimeMs ?? DEFAULT_SHUTDOWN_GRACE_TIME_MS,
        ...versioning,
      });
      cleanups.push(() => releaseUnrunWorker(created));
      limiterWorker = created;
    }
    const workers = limiterWorker ? [worker, limiterWorker] : [worker];

    const shutdown = () => {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    };
    let running: Promise<void> | undefined;
    const versionCheck = new AbortController();
    cleanups.push(async () => versionCheck.abort());
    return {
      worker,
      limiterWorker,
      metrics,
      deploymentVersion,
      metricsUrl: server?.url,
      run() {
        // Either worker stopping (a fatal error, or a shutdown) stops the other.
        running ??= Promise.allSettled(workers.map((w) => w.run().finally(shutdown))).then((outcomes) => {
          const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
          if (failed) throw failed.reason;
        });
        if (deploymentVersion) {
          // A deployment's first version makes itself current (nothing to roll out from); later ones wait for the operator.
          becomeCurrentIfNone(client, deploymentVersion, { logger, signal: versionCheck.signal }).catch((err: unknown) =>
            logger.warn(`could not check the deployment's current version: ${errorLine(err)}`),
          );
        }
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
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/**
 * Serves a foreign limiter task queue for a while. A limiter an older fleet started on its own queue
 * (`<queue>-limiter` before LIMITER_TASK_QUEUE existed) waits for a worker that may be gone; served
 * once, it answers the waiting permit requests and continues as new onto our queue, so the adopted
 * queue is only needed for a few minutes.
 */
class LimiterQueueAdopter {
  private readonly adopted = new Map<string, Promise<void>>();
  private readonly workers = new Set<Worker>();

  constructor(
    private readonly options: {
      connection: NativeConnection;
      namespace: string;
      workflowBundle: WorkflowBundleOption;
      logger: Logger;
      own: string;
      versioning: Pick<WorkerOptions, 'workerDeploymentOptions'>;
      buildId: string;
    },
  ) {}

  adopt(taskQueue: string, forMs = 3 * 60_000): void {
    if (taskQueue === this.options.own || this.adopted.has(taskQueue)) return;
    const { connection, namespace, workflowBundle, logger } = this.options;
    const release = claimTaskQueue(namespace, taskQueue, this.options.buildId);
    if (!release) return; // a worker of this process serves it already
    const served = (async () => {
      const worker = await Worker.create({ connection, namespace, taskQueue, workflowBundle, maxCachedWorkflows: 100, ...this.options.versioning });
      this.workers.add(worker);
      logger.warn('serving a foreign limiter task queue for a while: a rate limiter there had no worker', { taskQueue, forMs });
      const timer = setTimeout(() => worker.shutdown(), forMs);
      try {
        await worker.run();
      } finally {
        clearTimeout(timer);
        this.workers.delete(worker);
      }
    })()
      .catch((err: unknown) => logger.error('could not serve a foreign limiter task queue', { taskQueue, error: String(err) }))
      .finally(() => {
        this.adopted.delete(taskQueue);
        void release();
      });
    this.adopted.set(taskQueue, served);
  }

  async close(): Promise<void> {
    for (const worker of this.workers) if (worker.getState() === 'RUNNING') worker.shutdown();
    await Promise.all([...this.adopted.values()]);
  }
}

// ---- `npm run worker` ----------------------------------------------------------------------------

/** Exit codes of `npm run worker` (README, "Running several workers"). */
export const EXIT_CODE = {
  /** Stopped by SIGTERM/SIGINT after everything in flight finished or was cancelled. */
  stopped: 0,
  /** Could not start (environment, Temporal address or namespace, metrics port), or a worker failed. */
  failed: 1,
  /** Exited with work still in flight: the shutdown deadline passed, or a second signal came. */
  forced: 2,
} as const;

/** After a signal, the process exits at the latest this long after SHUTDOWN_GRACE_TIME. */
export const SHUTDOWN_DEADLINE_MARGIN_MS = 10_000;
/** A second signal sooner than this after the first is the same one delivered twice. */
const REPEATED_SIGNAL_MS = 1_000;
/** Once the worker has stopped, closing connections and the process exiting may take this long. */
const EXIT_DEADLINE_MS = 5_000;

/** One line: our own start errors speak for themselves; others keep their name (TransportError: ...). */
function errorLine(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const ours = err instanceof TemporalUnreachableError || err instanceof WorkerStartError;
  return `${ours || err.name === 'Error' ? '' : `${err.name}: `}${err.message.split('\n')[0]}`;
}

/** What a forced exit leaves behind, for the log: the activity attempts running and each worker's state. */
function describeInFlight(handle: DocsAdminWorker | undefined, nowMs = Date.now()): string {
  if (!handle) return 'the worker was still starting';
  const activities = handle.inFlight().map((a) => {
    const seconds = ((nowMs - a.startedAtMs) / 1000).toFixed(1);
    return `${a.activityType} (workflow ${a.workflowId ?? 'none'}, attempt ${a.attempt}, running ${seconds} s)`;
  });
  const workers = [handle.worker, ...(handle.limiterWorker ? [handle.limiterWorker] : [])].map((w) => `${w.options.taskQueue}: ${w.getState()}`);
  return `activities: ${activities.length > 0 ? activities.join('; ') : 'none'}; workers: ${workers.join(', ')}`;
}

export interface WorkerProcessOptions {
  /** The admin API client (default: AdminApiClient from the environment). */
  api?: AdminApi;
}

/**
 * `npm run worker`: the worker from the environment, run as this process until SIGTERM or SIGINT.
 * Resolves with the exit code (EXIT_CODE). It owns the process: its signal handlers, and process.exit
 * when a deadline passes (SHUTDOWN_GRACE_TIME + 10 s after a signal, or 5 s after the worker stopped
 * when something still holds the event loop). Every failure to start logs its cause on one line.
 */
export async function runWorkerProcess(env: NodeJS.ProcessEnv = process.env, options: WorkerProcessOptions = {}): Promise<number> {
  let config: WorkerConfig;
  let deployment: DeploymentSetting | undefined;
  try {
    config = loadWorkerConfig(env);
    deployment = deploymentFromEnv(env);
  } catch (err) {
    if (!(err instanceof ConfigError || err instanceof DeploymentConfigError)) throw err;
    const problems = err instanceof ConfigError ? err.problems : [err.message];
    process.stderr.write(`docs-admin worker: cannot start, fix the environment:\n${problems.map((p) => `  - ${p}\n`).join('')}`);
    return EXIT_CODE.failed;
  }
  // This function handles the signals itself (below), so the Runtime must not.
  const { logger } = await installRuntime({
    logLevel: config.logLevel,
    logFormat: config.logFormat,
    secrets: [config.adminApiKey],
    shutdownSignals: [],
  });
  const graceMs = config.shutdownGraceTimeMs ?? DEFAULT_SHUTDOWN_GRACE_TIME_MS;

  let handle: DocsAdminWorker | undefined;
  let stopSignal: NodeJS.Signals | undefined;
  let stopSignalAtMs = 0;
  let deadline: NodeJS.Timeout | undefined;
  const exitNow = (why: string) => {
    logger.error(`${why}; still in flight: ${describeInFlight(handle)}`);
    process.exit(EXIT_CODE.forced);
  };
  // The first signal drains: the SDK gives running activities graceMs, then cancels them. An activity
  // that ignores its cancellation would keep the process up for ever, so a deadline (unref'd: it never
  // delays a clean exit) ends it regardless. One Ctrl-C under `npm run worker` can arrive twice within
  // milliseconds (from the terminal and relayed by npm/tsx): only a repeat after that means "now".
  const onSignal = (signal: NodeJS.Signals) => {
    const limitMs = graceMs + SHUTDOWN_DEADLINE_MARGIN_MS;
    if (stopSignal) {
      if (Date.now() - stopSignalAtMs < REPEATED_SIGNAL_MS) return;
      return exitNow(`${signal} again while stopping: exiting now`);
    }
    stopSignal = signal;
    stopSignalAtMs = Date.now();
    logger.info(`${signal}: stopping; running activities get ${graceMs / 1000} s, then are cancelled; exit within ${limitMs / 1000} s`);
    handle?.shutdown();
    deadline = setTimeout(() => exitNow(`not stopped ${limitMs / 1000} s after ${signal}: exiting`), limitMs).unref();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  let code: number = EXIT_CODE.failed;
  const closers: (() => Promise<void>)[] = [];
  try {
    const connectOptions = { ...temporalConnectionOptions(env), address: config.address };
    const { apiKey, tls, metadata } = connectOptions;
    const connection = await NativeConnection.connect({
      address: config.address,
      ...(typeof apiKey === 'string' ? { apiKey } : {}),
      ...(tls !== undefined && tls !== null ? { tls } : {}),
      ...(metadata ? { metadata: metadata as Record<string, string> } : {}),
    }).catch((err: unknown) => {
      throw new TemporalUnreachableError(config.address, { cause: err });
    });
    closers.push(() => connection.close());
    const clientConnection = await Connection.connect({ ...connectOptions, connectTimeout: 10_000 }).catch((err: unknown) => {
      throw new TemporalUnreachableError(config.address, { cause: err });
    });
    closers.push(() => clientConnection.close());
    const client = new Client({ connection: clientConnection, namespace: config.namespace });

    const started = await createDocsAdminWorker(config, { connection, client, logger, api: options.api, deployment });
    handle = started;
    // Before the connections: the workers must let go of them first.
    closers.push(() => started.close());
    if (!stopSignal) {
      logger.info('docs-admin worker started', {
        taskQueue: config.taskQueue,
        namespace: config.namespace,
        address: config.address,
        adminApiUrl: config.adminApiUrl,
        metrics: started.metricsUrl ?? 'disabled',
        agentRateLimit: `${config.agentRateLimit.limit}/${config.agentRateLimit.windowMs}ms`,
        deploymentVersion: started.deploymentVersion ? `${started.deploymentVersion.deploymentName}/${started.deploymentVersion.buildId}` : 'unversioned',
      });
      await started.run();
    }
    logger.info('docs-admin worker stopped');
    code = EXIT_CODE.stopped;
  } catch (err) {
    logger.error(`docs-admin worker ${handle ? 'failed' : 'cannot start'}: ${errorLine(err)}`);
    code = EXIT_CODE.failed;
  } finally {
    clearTimeout(deadline);
    // Whatever is left open (a connection that does not close, a stray handle) must not keep the process.
    const exitCode = code;
    setTimeout(() => {
      logger.warn(`still running ${EXIT_DEADLINE_MS / 1000} s after the worker stopped: exiting`);
      process.exit(exitCode);
    }, EXIT_DEADLINE_MS).unref();
    for (const close of closers.reverse()) {
      await close().catch((err: unknown) => logger.warn(`while closing: ${errorLine(err)}`));
    }
  }
  return code;
}

/** The entry point of `npm run worker`: runWorkerProcess on process.env, its result as the exit code. */
export function main(options: WorkerProcessOptions = {}): void {
  runWorkerProcess(process.env, options).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`docs-admin worker failed: ${redact(errorLine(err), [process.env.ADMIN_API_KEY])}\n`);
      process.exitCode = EXIT_CODE.failed;
    },
  );
}

if (require.main === module) main();
