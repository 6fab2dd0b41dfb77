// `npm run worker`: the worker from the environment, run as this process until SIGTERM or SIGINT.
import type { Logger } from '@temporalio/worker';
import { redact } from '../api/credentials';
import type { AdminApi } from '../api/types';
import { ConfigError, loadWorkerConfig, type WorkerConfig } from '../config';
import { connectNative } from '../connection';
import { installRuntime } from '../observability/runtime';
import { TracingConfigError, startTracing, stopTracing } from '../observability/tracing';
import { errorLine } from './errors';
import { DeploymentConfigError, deploymentFromEnv, type DeploymentSetting } from './versioning';
import { DEFAULT_SHUTDOWN_GRACE_TIME_MS } from '../shared/defaults';
import { createDocsAdminWorker, type DocsAdminWorker } from './worker';

/** Exit codes of `npm run worker` (docs/operations.md, "Running several workers"). */
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

/** What a forced exit leaves behind, for the log: the activity attempts running and each worker's state. */
function describeInFlight(handle: DocsAdminWorker | undefined, nowMs = Date.now()): string {
  if (!handle) return 'the worker was still starting';
  const activities = handle.inFlight().map((a) => {
    const seconds = ((nowMs - a.startedAtMs) / 1000).toFixed(1);
    return `${a.activityType} (workflow ${a.workflowId ?? 'none'}, attempt ${a.attempt}, running ${seconds} s)`;
  });
  const workers = [handle.worker, ...(handle.limiterWorker ? [handle.limiterWorker] : [])].map(
    (w) => `${w.options.taskQueue}: ${w.getState()}`,
  );
  return `activities: ${activities.length > 0 ? activities.join('; ') : 'none'}; workers: ${workers.join(', ')}`;
}

export interface WorkerProcessOptions {
  /** The admin API client (default: AdminApiClient from the environment). */
  api?: AdminApi;
}

/**
 * The first SIGTERM/SIGINT drains: the SDK gives running activities graceMs, then cancels them. An
 * activity that ignores its cancellation would keep the process up for ever, so a deadline (unref'd: it
 * never delays a clean exit) ends it regardless. One Ctrl-C under `npm run worker` can arrive twice
 * within milliseconds (from the terminal and relayed by npm/tsx): only a repeat after that means "now".
 */
function onStopSignals(logger: Logger, graceMs: number, handle: () => DocsAdminWorker | undefined) {
  let stopSignal: NodeJS.Signals | undefined;
  let stopSignalAtMs = 0;
  let deadline: NodeJS.Timeout | undefined;
  const exitNow = (why: string) => {
    logger.error(`${why}; still in flight: ${describeInFlight(handle())}`);
    process.exit(EXIT_CODE.forced);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    const limitMs = graceMs + SHUTDOWN_DEADLINE_MARGIN_MS;
    if (stopSignal) {
      if (Date.now() - stopSignalAtMs < REPEATED_SIGNAL_MS) return;
      return exitNow(`${signal} again while stopping: exiting now`);
    }
    stopSignal = signal;
    stopSignalAtMs = Date.now();
    logger.info(
      `${signal}: stopping; running activities get ${graceMs / 1000} s, then are cancelled; exit within ${limitMs / 1000} s`,
    );
    handle()?.shutdown();
    deadline = setTimeout(() => exitNow(`not stopped ${limitMs / 1000} s after ${signal}: exiting`), limitMs).unref();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return { signalled: () => stopSignal !== undefined, clearDeadline: () => clearTimeout(deadline) };
}

/** Starts tracing when the OTEL_* variables ask for it; false (after one line on stderr) on a bad setting. */
async function startWorkerTracing(env: NodeJS.ProcessEnv): Promise<boolean> {
  try {
    await startTracing(env, 'docs-admin-worker');
    return true;
  } catch (err) {
    if (!(err instanceof TracingConfigError)) throw err;
    process.stderr.write(`docs-admin worker: cannot start, fix the environment: ${err.message}\n`);
    return false;
  }
}

/**
 * `npm run worker`: the worker from the environment, run as this process until SIGTERM or SIGINT.
 * Resolves with the exit code (EXIT_CODE). It owns the process: its signal handlers, and process.exit
 * when a deadline passes (SHUTDOWN_GRACE_TIME + 10 s after a signal, or 5 s after the worker stopped
 * when something still holds the event loop). Every failure to start logs its cause on one line.
 */
export async function runWorkerProcess(
  env: NodeJS.ProcessEnv = process.env,
  options: WorkerProcessOptions = {},
): Promise<number> {
  let config: WorkerConfig;
  let deployment: DeploymentSetting | undefined;
  try {
    config = loadWorkerConfig(env);
    deployment = deploymentFromEnv(env);
  } catch (err) {
    if (!(err instanceof ConfigError || err instanceof DeploymentConfigError)) throw err;
    const problems = err instanceof ConfigError ? err.problems : [err.message];
    // One problem: one line (what a supervisor's log shows first); several: one line each.
    process.stderr.write(
      problems.length === 1
        ? `docs-admin worker: cannot start, fix the environment: ${problems[0]}\n`
        : `docs-admin worker: cannot start, fix the environment:\n${problems.map((p) => `  - ${p}\n`).join('')}`,
    );
    return EXIT_CODE.failed;
  }
  // Before the runtime: its logger puts the active span's ids on each line.
  if (!(await startWorkerTracing(env))) return EXIT_CODE.failed;
  // This function handles the signals itself (below), so the Runtime must not.
  const { logger } = await installRuntime({
    logLevel: config.logLevel,
    logFormat: config.logFormat,
    secrets: [config.adminApiKey],
    shutdownSignals: [],
  });
  const graceMs = config.shutdownGraceTimeMs ?? DEFAULT_SHUTDOWN_GRACE_TIME_MS;

  let handle: DocsAdminWorker | undefined;
  const stop = onStopSignals(logger, graceMs, () => handle);

  let code: number = EXIT_CODE.failed;
  const closers: (() => Promise<void>)[] = [];
  try {
    const connection = await connectNative(env, config.address, { log: (line) => logger.warn(line) });
    closers.push(() => connection.close());
    const started = await createDocsAdminWorker(config, { connection, logger, api: options.api, deployment });
    handle = started;
    // Before the connections: the workers must let go of them first.
    closers.push(() => started.close());
    if (!stop.signalled()) {
      logger.info('docs-admin worker started', {
        taskQueue: config.taskQueue,
        namespace: config.namespace,
        address: config.address,
        adminApiUrl: config.adminApiUrl,
        metrics: started.metricsUrl ?? 'disabled',
        agentRateLimit: `${config.agentRateLimit.limit}/${config.agentRateLimit.windowMs}ms`,
        deploymentVersion: started.deploymentVersion
          ? `${started.deploymentVersion.deploymentName}/${started.deploymentVersion.buildId}`
          : 'unversioned',
      });
      await started.run();
    }
    logger.info('docs-admin worker stopped');
    code = EXIT_CODE.stopped;
  } catch (err) {
    logger.error(`docs-admin worker ${handle ? 'failed' : 'cannot start'}: ${errorLine(err)}`);
    code = EXIT_CODE.failed;
  } finally {
    stop.clearDeadline();
    // Whatever is left open (a connection that does not close, a stray handle) must not keep the process.
    const exitCode = code;
    setTimeout(() => {
      logger.warn(`still running ${EXIT_DEADLINE_MS / 1000} s after the worker stopped: exiting`);
      process.exit(exitCode);
    }, EXIT_DEADLINE_MS).unref();
    for (const close of closers.reverse()) {
      await close().catch((err: unknown) => logger.warn(`while closing: ${errorLine(err)}`));
    }
    // Last: the spans of the drain itself are exported too.
    if (!(await stopTracing())) logger.warn('the last spans could not be exported: no collector answered');
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
