// The project's MetricsRecorder on prom-client, and the worker's single Prometheus endpoint.
//
// One endpoint, two sources: the project's own metrics live in a prom-client Registry (always on,
// whatever the Temporal Runtime was installed with, plus Node's process metrics), and the SDK's
// metrics (temporal_*) come from Temporal Core's own Prometheus exporter, which the worker binds to a
// private loopback port. GET /metrics on the public endpoint returns both, concatenated; if Core's
// exporter is unreachable the project's metrics are still served and docs_admin_sdk_metrics_up is 0.
import http from 'node:http';
import {
  Counter,
  type CounterConfiguration,
  Gauge,
  type GaugeConfiguration,
  Histogram,
  type HistogramConfiguration,
  Registry,
  collectDefaultMetrics,
} from 'prom-client';
import { listen, sendError, StatusError } from '../process/small-server';
import type { MetricsRecorder } from './metrics';

export const METRIC_PREFIX = 'docs_admin_';

export interface PrometheusMetrics extends MetricsRecorder {
  readonly registry: Registry;
  /**
   * Reports the agent jobs waiting for an operator (namespace-wide, from visibility) in every scrape;
   * `count` is called at most once per PARKED_COUNT_TTL_MS. Every worker reports the same number.
   */
  watchParkedJobs(count: () => Promise<number>): void;
}

/** A scrape reuses the last count of parked jobs for this long (a visibility query per scrape is plenty). */
export const PARKED_COUNT_TTL_MS = 10_000;

export interface PrometheusMetricsOptions {
  /** Default: a fresh Registry (several workers in one test process never collide). */
  registry?: Registry;
  /** Node process metrics (CPU, heap, event loop lag). Default true. */
  processMetrics?: boolean;
}

type Config<C> = Omit<C, 'name' | 'registers'>;
/** The project's metrics: each named with METRIC_PREFIX, in the worker's registry. */
function metricsIn(registry: Registry) {
  const ours = <C>(name: string, config: C) => ({ ...config, name: `${METRIC_PREFIX}${name}`, registers: [registry] });
  return {
    counter: <L extends string>(name: string, c: Config<CounterConfiguration<L>>) => new Counter(ours(name, c)),
    gauge: <L extends string>(name: string, c: Config<GaugeConfiguration<L>>) => new Gauge(ours(name, c)),
    histogram: <L extends string>(name: string, c: Config<HistogramConfiguration<L>>) => new Histogram(ours(name, c)),
  };
}
type OurMetrics = ReturnType<typeof metricsIn>;

/** A MetricsRecorder that counts into a prom-client Registry. */
export function createPrometheusMetrics(options: PrometheusMetricsOptions = {}): PrometheusMetrics {
  const registry = options.registry ?? new Registry();
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry });
  const ours = metricsIn(registry);

  const apiCalls = ours.counter('api_calls_total', {
    help: 'Admin API calls by operation and outcome (HTTP status, or an error code such as NetworkError or Timeout).',
    labelNames: ['operation', 'status'] as const,
  });
  const apiDuration = ours.histogram('api_call_duration_seconds', {
    help: 'Admin API call latency by operation.',
    labelNames: ['operation'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  });
  const rateLimited = ours.counter('api_rate_limited_total', {
    help: 'Admin API calls answered 429 (rate limited), by operation.',
    labelNames: ['operation'] as const,
  });
  const activityRetries = ours.counter('activity_retries_total', {
    help: 'Activity attempts after the first (Temporal retrying), by activity type.',
    labelNames: ['activity_type'] as const,
  });
  const polls = ours.counter('polls_total', {
    help: 'Job status polls, by job kind (export, agent or deployment update).',
    labelNames: ['kind'] as const,
  });
  return {
    registry,
    ...operationsGauges(ours),
    ...publishingMetrics(ours),
    ...keeperAndKeyCounters(ours),
    apiCall(operation, status, durationMs) {
      apiCalls.inc({ operation, status });
      apiDuration.observe({ operation }, Math.max(0, durationMs) / 1000);
      if (status === '429') rateLimited.inc({ operation });
    },
    poll(kind) {
      polls.inc({ kind });
    },
    activityRetry(activityType) {
      activityRetries.inc({ activity_type: activityType });
    },
  };
}

/** What keepers apply and refuse, and the payloads this worker could not decrypt. */
function keeperAndKeyCounters(
  ours: OurMetrics,
): Pick<PrometheusMetrics, 'bundleRefresh' | 'bundleApplied' | 'sinkRefused' | 'payloadKeyError'> {
  const bundleRefreshes = ours.counter('bundle_refreshes_total', {
    help: 'Fresh bundle links generated for an already exported job.',
  });
  const payloadKeyErrors = ours.counter('payload_key_errors_total', {
    help: 'Payloads this worker could not decrypt: their key is not in PAYLOAD_ENCRYPTION_KEYS_FILE (their workflow task fails).',
  });
  const bundlesApplied = ours.counter('bundles_applied_total', {
    help: 'Bundles applied to a deployment, by sink.',
    labelNames: ['sink'] as const,
  });
  const sinkRefusals = ours.counter('keeper_sink_refusals_total', {
    help: 'Keeper sinks the worker refused (checks and applies), by reason: unknown, inline, invalid, domain, address, path, changed.',
    labelNames: ['reason'] as const,
  });

  return {
    bundleRefresh: () => bundleRefreshes.inc(),
    bundleApplied: (sink) => bundlesApplied.inc({ sink }),
    sinkRefused: (reason) => sinkRefusals.inc({ reason }),
    payloadKeyError: () => payloadKeyErrors.inc(),
  };
}

/** What the alert rules need beyond the counters: parked jobs and each keeper's link expiry. */
function operationsGauges(ours: OurMetrics): Pick<PrometheusMetrics, 'watchParkedJobs' | 'linkApplied'> {
  const linkExpiry = ours.gauge('keeper_link_expiry_timestamp_seconds', {
    help: 'When the bundle link a keeper last applied (through this worker) expires, by domain (Unix seconds).',
    labelNames: ['domain'] as const,
  });
  let countParked: (() => Promise<number>) | undefined;
  let lastCount = { atMs: -Infinity, value: 0 };
  ours.gauge('agent_jobs_needs_operator', {
    help: 'Agent jobs waiting for an operator (DocsJobStatus needs-operator) in the namespace; -1 when visibility did not answer.',
    async collect() {
      if (!countParked) return;
      if (Date.now() - lastCount.atMs >= PARKED_COUNT_TTL_MS) {
        const value = await countParked().catch(() => -1);
        lastCount = { atMs: Date.now(), value };
      }
      this.set(lastCount.value);
    },
  });

  return {
    watchParkedJobs(count) {
      countParked = count;
      lastCount = { atMs: -Infinity, value: 0 };
    },
    linkApplied(domain, expiresAt) {
      const ms = expiresAt === null ? Number.NaN : Date.parse(expiresAt);
      if (Number.isFinite(ms)) linkExpiry.set({ domain }, ms / 1000);
      else linkExpiry.remove({ domain });
    },
  };
}

/** Publishing (keepers with a source): how long a publish has waited, and how long it took to apply. */
function publishingMetrics(ours: OurMetrics): Pick<PrometheusMetrics, 'publishWaiting' | 'publishReached'> {
  const waiting = ours.gauge('keeper_publish_waiting_since_timestamp_seconds', {
    help: 'When the oldest publish not yet applied to the deployment arrived, by domain (Unix seconds; absent: none).',
    labelNames: ['domain'] as const,
  });
  const served = ours.gauge('keeper_publish_served_timestamp_seconds', {
    help: 'When the newest publish whose commit is applied to the deployment arrived, by domain (Unix seconds).',
    labelNames: ['domain'] as const,
  });
  const reached = ours.histogram('keeper_publish_to_deployment_seconds', {
    help: 'From a publish (a push or merge) to its commit applied to the deployment.',
    buckets: [10, 20, 30, 45, 60, 90, 120, 300, 600, 1800, 3600],
  });
  return {
    publishWaiting(domain, sinceMs) {
      if (sinceMs === null) waiting.remove({ domain });
      else waiting.set({ domain }, sinceMs / 1000);
    },
    publishReached(domain, requestedAtMs) {
      reached.observe(Math.max(0, Date.now() - requestedAtMs) / 1000);
      served.set({ domain }, requestedAtMs / 1000);
    },
  };
}

export interface MetricsServerOptions {
  registry: Registry;
  port: number;
  /** Default 127.0.0.1: metrics stay on the host unless the operator opens them (METRICS_HOST). */
  host?: string;
  /** Temporal Core's Prometheus exporter (http://127.0.0.1:PORT/metrics), appended to every scrape. */
  sdkMetricsUrl?: string;
  /** How long a scrape waits for Core's exporter. Default 2000 ms. */
  sdkTimeoutMs?: number;
}

export interface MetricsServer {
  /** http://host:port/metrics */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

async function fetchSdkMetrics(url: string, timeoutMs: number): Promise<string | null> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    if (!response.ok) return null;
    return await response.text();
  } catch {
    return null;
  }
}

/** Everything one scrape returns: the project's registry, then the SDK's metrics when available. */
export async function renderMetrics(
  registry: Registry,
  sdkMetricsUrl?: string,
  sdkTimeoutMs = 2_000,
  sdkUp?: Gauge,
): Promise<string> {
  const sdk = sdkMetricsUrl ? await fetchSdkMetrics(sdkMetricsUrl, sdkTimeoutMs) : null;
  sdkUp?.set(sdk === null ? 0 : 1);
  const own = await registry.metrics();
  if (sdk === null) return own;
  return `${own.endsWith('\n') ? own : `${own}\n`}${sdk}`;
}

/** Serves GET /metrics (Prometheus text format); any other path is 404. Resolves once listening. */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  let sdkUp: Gauge | undefined;
  if (options.sdkMetricsUrl) {
    const name = `${METRIC_PREFIX}sdk_metrics_up`;
    sdkUp =
      (options.registry.getSingleMetric(name) as Gauge | undefined) ??
      new Gauge({
        name,
        help: "1 when the Temporal SDK's metrics were included in this scrape.",
        registers: [options.registry],
      });
  }
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || (path !== '/metrics' && path !== '/'))
      return void sendError(req, res, new StatusError(404, 'not found: try GET /metrics'), 'text');
    renderMetrics(options.registry, options.sdkMetricsUrl, options.sdkTimeoutMs, sdkUp).then(
      (body) => res.writeHead(200, { 'content-type': options.registry.contentType }).end(body),
      (err: unknown) => sendError(req, res, new StatusError(500, `metrics failed: ${(err as Error).message}`), 'text'),
    );
  });
  const { url, port, close } = await listen(server, options.port, options.host);
  return { url: `${url}/metrics`, port, close };
}
