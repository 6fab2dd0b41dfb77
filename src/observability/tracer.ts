// What the rest of the code sees of a running tracer: ./tracing.ts decides whether there is one, and
// ./tracing-sdk.ts (loaded only then) implements it. Types and one constant: nothing here loads
// OpenTelemetry, so the admin API client, which takes its call spans' shape from here, never does.
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { WorkflowSpan } from '../shared/workflow-spans';

/** An admin API call's span, as the API client sees it (src/api/client.ts). */
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

export const TRACING_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type TracingProtocol = (typeof TRACING_PROTOCOLS)[number];

/** A log line's trace and span ids (the names the SDK's own interceptors use). */
export interface TraceIds {
  trace_id: string;
  span_id: string;
}

/** What the rest of the code sees of a running tracer; implemented in ./tracing-sdk.ts. */
export interface Tracing {
  readonly protocol: TracingProtocol;
  readonly endpoint: string;
  /** The admin API client's spans (src/api/client.ts). */
  readonly apiCalls: ApiCallTracer;
  /** Runs fn in an INTERNAL span; fn may add attributes (never private values) to it. */
  inSpan<T>(
    name: string,
    attributes: Record<string, string | number>,
    fn: (set: (attributes: Record<string, string | number | boolean>) => void) => Promise<T>,
  ): Promise<T>;
  /** Runs fn with a W3C traceparent (validated by the caller) as the parent of the spans it makes. */
  withTraceparent<T>(traceparent: string, fn: () => Promise<T>): Promise<T>;
  /** The ids of the span active here, if any. */
  traceIds(): TraceIds | undefined;
  /** Temporal's workflow client interceptor: starts, updates and signals carry the trace context. */
  clientInterceptor(): WorkflowClientInterceptor;
  /** Exports the spans the workflow sandbox made (src/workflows/tracing.ts), through the workflow sink. */
  exportWorkflowSpans(spans: readonly WorkflowSpan[]): void;
  /** Temporal's activity interceptors: RunActivity spans, trace ids on the activity's log lines. */
  readonly activityInterceptors: ActivityInterceptorsFactory;
  /** Exports what is buffered (tests). */
  flush(): Promise<void>;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}
