// The OpenTelemetry SDK behind src/observability/tracing.ts, loaded only when tracing is on: one
// NodeTracerProvider (W3C trace context, the sampler of OTEL_TRACES_SAMPLER, resource attributes of
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES), one batch processor, an OTLP/HTTP exporter (protobuf or
// JSON). Temporal's activity interceptors use the same provider; workflow spans come out of the sandbox
// through the `docsAdminSpans` sink (WORKFLOW_SPANS_SINK, src/worker/tracing.ts) into the same processor.
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  isSpanContextValid,
  propagation,
  trace,
  type Attributes,
} from '@opentelemetry/api';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { Resource, envDetectorSync } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { Context as ActivityContext } from '@temporalio/activity';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { WorkflowSpan } from '../shared/workflow-spans';
import type { ApiCallEnd, ApiCallStart, ApiCallTracer, Tracing, TracingProtocol } from './tracer';

const TRACER_NAME = 'docs-admin-temporal';

/** The attempt of the activity this code runs in (1 outside an activity). */
function activityAttempt(): number | undefined {
  try {
    return ActivityContext.current().info.attempt;
  } catch {
    return undefined;
  }
}

function apiCallTracer(tracer: ReturnType<typeof trace.getTracer>): ApiCallTracer {
  return {
    start(call: ApiCallStart) {
      const origin = new URL(call.origin);
      const attempt = activityAttempt();
      const attributes: Attributes = {
        'http.request.method': call.method,
        'http.route': call.route,
        'server.address': origin.hostname,
        'server.port': Number(origin.port || (origin.protocol === 'https:' ? 443 : 80)),
        'docs_admin.operation': call.operation,
        ...(attempt !== undefined ? { 'temporal.activity.attempt': attempt } : {}),
        ...(attempt !== undefined && attempt > 1 ? { 'http.request.resend_count': attempt - 1 } : {}),
      };
      const span = tracer.startSpan(`${call.method} ${call.route}`, { kind: SpanKind.CLIENT, attributes });
      return {
        end({ statusCode, errorType, retryAfter }: ApiCallEnd) {
          if (statusCode !== undefined) span.setAttribute('http.response.status_code', statusCode);
          if (retryAfter !== undefined) span.setAttribute('http.response.header.retry-after', [retryAfter]);
          const failed = errorType ?? (statusCode !== undefined && statusCode >= 400 ? String(statusCode) : undefined);
          if (failed !== undefined) {
            span.setAttribute('error.type', failed);
            span.setStatus({ code: SpanStatusCode.ERROR });
          }
          span.end();
        },
      };
    },
  };
}

const WORKFLOW_SCOPE = { name: '@temporalio/interceptor-workflow' };

/** A span of the workflow sandbox as the SDK's processor takes it. */
function readableSpan(span: WorkflowSpan, resource: Resource): ReadableSpan {
  const spanContext = { traceId: span.traceId, spanId: span.spanId, traceFlags: 1 };
  return {
    name: span.name,
    kind: SpanKind.INTERNAL,
    spanContext: () => spanContext,
    ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
    startTime: hrTime(span.startMs),
    endTime: hrTime(span.endMs),
    duration: hrTime(Math.max(0, span.endMs - span.startMs)),
    status: { code: span.failed ? SpanStatusCode.ERROR : SpanStatusCode.OK },
    attributes: span.attributes,
    links: [],
    events: [],
    ended: true,
    resource,
    instrumentationLibrary: WORKFLOW_SCOPE,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

const hrTime = (ms: number): [number, number] => [Math.floor(ms / 1000), Math.round((ms % 1000) * 1e6)];

export function createTracing(settings: { protocol: TracingProtocol; endpoint: string; serviceName: string }): Tracing {
  // The defaults first, then the process's name, then what the operator set (OTEL_SERVICE_NAME wins).
  const resource = Resource.default()
    .merge(new Resource({ 'service.name': settings.serviceName }))
    .merge(envDetectorSync.detect({}));
  const exporterOptions = { url: settings.endpoint };
  const exporter =
    settings.protocol === 'http/json'
      ? new JsonTraceExporter(exporterOptions)
      : new ProtobufTraceExporter(exporterOptions);
  const processor = new BatchSpanProcessor(exporter);
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  // The global provider, context manager (AsyncLocalStorage) and W3C propagator: Temporal's interceptors use them.
  provider.register();
  const tracer = provider.getTracer(TRACER_NAME);
  return {
    protocol: settings.protocol,
    endpoint: settings.endpoint,
    apiCalls: apiCallTracer(tracer),
    inSpan(name, attributes, fn) {
      return tracer.startActiveSpan(name, { attributes }, async (span) => {
        try {
          return await fn((more) => span.setAttributes(more));
        } catch (err) {
          span.setStatus({ code: SpanStatusCode.ERROR });
          span.setAttribute('error.type', err instanceof Error ? err.name : 'Error');
          throw err;
        } finally {
          span.end();
        }
      });
    },
    withTraceparent(traceparent, fn) {
      return context.with(propagation.extract(ROOT_CONTEXT, { traceparent }), fn);
    },
    traceIds() {
      const spanContext = trace.getSpan(context.active())?.spanContext();
      if (!spanContext || !isSpanContextValid(spanContext)) return undefined;
      return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
    },
    clientInterceptor: () => new OpenTelemetryWorkflowClientInterceptor(),
    exportWorkflowSpans: (spans) => {
      for (const span of spans) processor.onEnd(readableSpan(span, resource));
    },
    activityInterceptors: (ctx) => ({
      inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
      outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
    }),
    flush: () => provider.forceFlush(),
    // Unregistered too, so that a later start in this process (tests) registers its own.
    shutdown: () =>
      provider.shutdown().finally(() => {
        trace.disable();
        context.disable();
        propagation.disable();
      }),
  };
}
