// The project's own metrics, as an interface the API client hooks and activities call. The worker
// backs it with prom-client (src/observability/prometheus.ts); tests use the no-op or a counting fake.

export interface MetricsRecorder {
  /** One HTTP call to the admin API; status is the HTTP status or an error code such as NetworkError. */
  apiCall(operation: string, status: string, durationMs: number): void;
  /** One status poll of a job. */
  poll(kind: 'export' | 'agent' | 'update'): void;
  /** An activity attempt after the first (Temporal is retrying it). */
  activityRetry(activityType: string): void;
  /** A fresh bundle link generated for an already exported job. */
  bundleRefresh(): void;
  /** A bundle applied to a deployment through a sink. */
  bundleApplied(sink: string): void;
  /** A keeper's sink refused by the worker (not in its sinks file, inline, a link or address in the way). */
  sinkRefused(reason: string): void;
  /** The link a keeper applied for `domain` and when it expires (null: it does not, e.g. the mirror). */
  linkApplied(domain: string, expiresAt: string | null): void;
  /** A payload this worker could not decrypt (a key missing from PAYLOAD_ENCRYPTION_KEYS_FILE). */
  payloadKeyError(): void;
  /** Since when (Unix ms) `domain`'s oldest publish waits to reach the deployment; null: none waits. */
  publishWaiting(domain: string, sinceMs: number | null): void;
  /** A publish's commit applied to `domain`'s deployment; the publish arrived at `requestedAtMs` (Unix ms). */
  publishReached(domain: string, requestedAtMs: number): void;
}

export const noopMetrics: MetricsRecorder = {
  apiCall: () => undefined,
  poll: () => undefined,
  activityRetry: () => undefined,
  bundleRefresh: () => undefined,
  bundleApplied: () => undefined,
  sinkRefused: () => undefined,
  linkApplied: () => undefined,
  payloadKeyError: () => undefined,
  publishWaiting: () => undefined,
  publishReached: () => undefined,
};
