// The process-wide Temporal Runtime: the logger (Core's logs forwarded to it) and Core's Prometheus
// exporter, which the worker's metrics endpoint appends to each scrape.
import { Runtime, type Logger } from '@temporalio/worker';
import { freeLoopbackPort } from './free-port';
import { createLogger, type LoggerOptions } from './logger';

export interface InstallRuntimeOptions extends LoggerOptions {
  /** Bind Core's Prometheus exporter on a private loopback port (default true). */
  sdkMetrics?: boolean;
  /** Signals on which the Runtime shuts down every running Worker (default SIGINT and SIGTERM). */
  shutdownSignals?: NodeJS.Signals[];
}

export interface InstalledRuntime {
  logger: Logger;
  /** Core's exporter (http://127.0.0.1:PORT/metrics), when sdkMetrics. */
  sdkMetricsUrl?: string;
}

let installed: InstalledRuntime | undefined;

/** What installRuntime installed, if it ran in this process. */
export function installedRuntime(): InstalledRuntime | undefined {
  return installed;
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
