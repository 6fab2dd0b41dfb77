// The docs-admin worker: every workflow and activity on one task queue, configured from the
// environment (`npm run worker`), or started in-process by the demo, tests and benchmarks through
// createDocsAdminWorker.
//
// Metrics: one Prometheus endpoint (METRICS_PORT, default 9464, 127.0.0.1 unless METRICS_HOST). The
// project's metrics are prom-client counters (src/prometheus.ts); the SDK's temporal_* metrics come
// from Core's Prometheus exporter, bound by installRuntime to a private loopback port and appended to
// each scrape. Logs go through the SDK's Runtime logger (text or JSON lines), with the admin key
// redacted from every line.
import { Client, Connection } from '@temporalio/client';
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
import { temporalConnectionOptions, unreachableMessage } from './client';
import { LIMITER_TASK_QUEUE } from './shared';
import { freeLoopbackPort } from './free-port';

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
    shutdownSignals: ['SIGINT', 'SIGTERM'],
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
  /** The limiter task queue to serve (default LIMITER_TASK_QUEUE; tests that share a server isolate theirs). */
  limiterTaskQueue?: string;
  /** Extra Worker.create options (tuning in benchmarks). */
  workerOptions?: { maxConcurrentActivityTaskExecutions?: number; maxConcurrentWorkflowTaskExecutions?: number; maxCachedWorkflows?: number };
}

export interface DocsAdminWorker {
  /** Serves TEMPORAL_TASK_QUEUE: the jobs' workflows and every activity. */
  worker: Worker;
  /** Serves LIMITER_TASK_QUEUE: the per-project rate limiter workflows of every fleet in the namespace. */
  limiterWorker: Worker;
  metrics: MetricsRecorder;
  /** The Prometheus endpoint (http://host:port/metrics), when one is running. */
  metricsUrl?: string;
  /** Runs both workers (remembered, so close() can wait for it). */
  run(): Promise<void>;
  /** Shuts the worker down if it is running (waiting for it), then closes everything this function opened. */
  close(): Promise<void>;
}

function isPrometheus(metrics: MetricsRecorder): metrics is PrometheusMetrics {
  return 'registry' in metrics;
}

export async function createDocsAdminWorker(config: WorkerConfig, options: DocsAdminWorkerOptions = {}): Promise<DocsAdminWorker> {
  const cleanups: (() => Promise<void>)[] = [];
  const cleanup = async () => {
    for (const fn of cleanups.reverse()) await fn().catch(() => undefined);
    cleanups.length = 0;
  };
  try {
    const logger = options.logger ?? installed?.logger ?? Runtime.instance().logger;
    const metrics = options.metrics ?? createPrometheusMetrics();

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
    // Bundled once for every worker of this process.
    const workflowBundle = options.workflowBundle ?? (await bundleWorkflowCode({ workflowsPath: require.resolve('./workflows'), logger }));
    const adopter = new LimiterQueueAdopter({ connection, namespace: config.namespace, workflowBundle, logger, own: limiterQueue });
    cleanups.push(() => adopter.close());
    const activities = createActivities({
      api,
      metrics,
      temporal: client,
      agentRateLimit: config.agentRateLimit,
      limiterTaskQueue: limiterQueue,
      adoptLimiterTaskQueue: (taskQueue) => adopter.adopt(taskQueue),
    });
    const worker = await Worker.create({
      connection,
      namespace: config.namespace,
      taskQueue: config.taskQueue,
      workflowBundle,
      activities,
      shutdownGraceTime: config.shutdownGraceTimeMs ?? DEFAULT_SHUTDOWN_GRACE_TIME_MS,
      ...WORKER_POLLERS,
      interceptors: {
        // One place counts retries for every activity: attempt > 1 means Temporal is retrying it.
        activity: [
          (ctx) => ({
            inbound: {
              execute: (input, next) => {
                if (ctx.info.attempt > 1) metrics.activityRetry(ctx.info.activityType);
                return next(input);
              },
            },
          }),
        ],
      },
      ...options.workerOptions,
    });

    // The rate limiter workflows on their own queue, slots and workflow thread (see limiterTaskQueue).
    const limiterWorker = await Worker.create({
      connection,
      namespace: config.namespace,
      taskQueue: limiterQueue,
      workflowBundle,
      ...WORKER_POLLERS,
      shutdownGraceTime: config.shutdownGraceTimeMs ?? DEFAULT_SHUTDOWN_GRACE_TIME_MS,
    });
    const workers = [worker, limiterWorker];

    let server: MetricsServer | undefined;
    const listen =
      options.metricsListen === undefined
        ? config.metricsPort === 0
          ? false
          : { port: config.metricsPort, host: config.metricsHost }
        : options.metricsListen;
    if (listen && isPrometheus(metrics)) {
      server = await startMetricsServer({
        registry: metrics.registry,
        port: listen.port,
        host: listen.host ?? '127.0.0.1',
        sdkMetricsUrl: options.sdkMetricsUrl ?? installed?.sdkMetricsUrl,
      });
      const started = server;
      cleanups.push(() => started.close());
    }

    let running: Promise<void> | undefined;
    return {
      worker,
      limiterWorker,
      metrics,
      metricsUrl: server?.url,
      run() {
        // Either worker stopping (a fatal error, or a shutdown signal) stops the other.
        running ??= Promise.allSettled(
          workers.map((w) =>
            w.run().finally(() => {
              for (const other of workers) if (other.getState() === 'RUNNING') other.shutdown();
            }),
          ),
        ).then((outcomes) => {
          const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
          if (failed) throw failed.reason;
        });
        return running;
      },
      async close() {
        for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
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
    private readonly options: { connection: NativeConnection; namespace: string; workflowBundle: WorkflowBundleOption; logger: Logger; own: string },
  ) {}

  adopt(taskQueue: string, forMs = 3 * 60_000): void {
    if (taskQueue === this.options.own || this.adopted.has(taskQueue)) return;
    const { connection, namespace, workflowBundle, logger } = this.options;
    const served = (async () => {
      const worker = await Worker.create({ connection, namespace, taskQueue, workflowBundle, maxCachedWorkflows: 100 });
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
      .finally(() => this.adopted.delete(taskQueue));
    this.adopted.set(taskQueue, served);
  }

  async close(): Promise<void> {
    for (const worker of this.workers) if (worker.getState() === 'RUNNING') worker.shutdown();
    await Promise.all([...this.adopted.values()]);
  }
}

// ---- `npm run worker` ----------------------------------------------------------------------------

async function main(): Promise<number> {
  let config: WorkerConfig;
  try {
    config = loadWorkerConfig(process.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`docs-admin worker: cannot start, fix the environment:\n${err.problems.map((p) => `  - ${p}\n`).join('')}`);
    return 1;
  }
  const { logger } = await installRuntime({
    logLevel: config.logLevel,
    logFormat: config.logFormat,
    secrets: [config.adminApiKey],
  });

  const connectOptions = { ...temporalConnectionOptions(process.env), address: config.address };
  let connection: NativeConnection;
  try {
    const { apiKey, tls, metadata } = connectOptions;
    connection = await NativeConnection.connect({
      address: config.address,
      ...(typeof apiKey === 'string' ? { apiKey } : {}),
      ...(tls !== undefined && tls !== null ? { tls } : {}),
      ...(metadata ? { metadata: metadata as Record<string, string> } : {}),
    });
  } catch (err) {
    logger.error(unreachableMessage(config.address, err));
    return 1;
  }
  const clientConnection = await Connection.connect({ ...connectOptions, connectTimeout: 10_000 });
  const client = new Client({ connection: clientConnection, namespace: config.namespace });

  let handle: DocsAdminWorker | undefined;
  try {
    handle = await createDocsAdminWorker(config, { connection, client, logger });
    logger.info('docs-admin worker started', {
      taskQueue: config.taskQueue,
      namespace: config.namespace,
      address: config.address,
      adminApiUrl: config.adminApiUrl,
      metrics: handle.metricsUrl ?? 'disabled',
      agentRateLimit: `${config.agentRateLimit.limit}/${config.agentRateLimit.windowMs}ms`,
    });
    await handle.run();
    logger.info('docs-admin worker stopped');
    return 0;
  } finally {
    await handle?.close();
    await clientConnection.close();
    await connection.close();
  }
}

if (require.main === module) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      process.stderr.write(`docs-admin worker failed: ${redact(message, [process.env.ADMIN_API_KEY])}\n`);
      process.exitCode = 1;
    },
  );
}
