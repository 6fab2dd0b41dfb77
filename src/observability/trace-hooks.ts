// The shape of an admin API call's span, as the API client sees it: no OpenTelemetry types, so the
// client never loads OpenTelemetry (src/observability/tracing.ts decides whether anything is traced).

export interface ApiCallStart {
  /** The client's operation name (createAgentJob, getExport, ...). */
  operation: string;
  method: 'GET' | 'POST';
  /** The route template, never the path with its ids: /v2/agent/{projectId}/job. */
  route: string;
  /** The API's origin (scheme, host, port): never a path or a query. */
  origin: string;
}

export interface ApiCallEnd {
  /** The HTTP status, when a response came. */
  statusCode?: number;
  /** An error code (Timeout, NetworkError, ...) when none came or the call failed. */
  errorType?: string;
  /** The response's Retry-After header as sent (seconds or an HTTP date). */
  retryAfter?: string;
}

export interface ApiCallSpan {
  end(outcome: ApiCallEnd): void;
}

export interface ApiCallTracer {
  start(call: ApiCallStart): ApiCallSpan;
}
