// The workflow side of tracing, bundled into every worker's workflow code (src/worker/tracing.ts) whether
// tracing is on or not, and built so that it can never change what a workflow does: span ids come from the
// run id and a counter (src/shared/trace-ids.ts), never from the workflow's random source; every
// intercepted call returns the very promise `next` returned, so no await is added and no coroutine runs
// in another order; the only thing added to commands is a header, which replay does not compare. So
// histories recorded before it existed replay unchanged, and switching tracing on or off is never seen.
// Temporal's own workflow interceptors do not qualify: they draw ids from the workflow's random source
// (the replay corpus failed with them) and run an OpenTelemetry SDK in every workflow, tracing off or on.
//
// The spans (docs/operations.md, "What a trace shows") are all children of RunWorkflow: a workflow has no
// "current span" without async context, and one trace per job is the point. Activities and children get
// the span's context in the `_tracer-data` header that Temporal's activity and client interceptors read.
// Finished spans leave through a sink, which drops them when tracing is off and during replay.
import { defaultPayloadConverter, type Headers } from '@temporalio/common';
import { proxySinks, workflowInfo, type WorkflowInterceptors } from '@temporalio/workflow';
import {
  type TraceParent,
  formatTraceparent,
  parseTraceparent,
  workflowSpanId,
  workflowTraceId,
} from '../shared/trace-ids';
import { WORKFLOW_SPANS_SINK, type WorkflowSpan, type WorkflowSpanSinks } from '../shared/workflow-spans';

/** The header Temporal's OpenTelemetry interceptors carry the trace context in (a JSON {traceparent}). */
export const TRACE_HEADER = '_tracer-data';

const sinks = proxySinks<WorkflowSpanSinks>();

function contextFrom(headers: Headers): TraceParent | undefined {
  const payload = headers[TRACE_HEADER];
  if (!payload) return undefined;
  try {
    return parseTraceparent(defaultPayloadConverter.fromPayload<{ traceparent?: unknown }>(payload)?.traceparent);
  } catch {
    return undefined;
  }
}

function withContext(headers: Headers, context: TraceParent): Headers {
  return { ...headers, [TRACE_HEADER]: defaultPayloadConverter.toPayload({ traceparent: formatTraceparent(context) }) };
}

/** One run's spans: ids from its run id and a counter, the run's span as every other one's parent. */
class RunSpans {
  #seq = 0;
  root?: TraceParent;

  constructor(private readonly runId: string) {}

  /** Starts a span under `parent` (default: the run's); end() exports it when its trace is sampled. */
  start(name: string, parent: TraceParent | undefined, attributes: Record<string, string | number> = {}) {
    const info = workflowInfo();
    const base = parent ?? this.root;
    const context: TraceParent = {
      traceId: base?.traceId ?? workflowTraceId(this.runId),
      spanId: workflowSpanId(this.runId, ++this.#seq),
      sampled: base?.sampled ?? true,
    };
    const startMs = Date.now();
    const end = (failed: boolean) => {
      if (!context.sampled) return;
      const span: WorkflowSpan = {
        name,
        traceId: context.traceId,
        spanId: context.spanId,
        ...(base ? { parentSpanId: base.spanId } : {}),
        startMs,
        endMs: Date.now(),
        failed,
        attributes: { temporalWorkflowId: info.workflowId, run_id: info.runId, ...attributes },
      };
      sinks[WORKFLOW_SPANS_SINK].export([span]);
    };
    return { context, end };
  }

  /**
   * Ends the span when `promise` settles; returns `promise` itself (no await added). The reaction observes
   * a rejection, so an activity promise nobody awaits no longer fails the task as unhandled: every call
   * of these workflows is awaited, so none depends on that.
   */
  around<T>(span: ReturnType<RunSpans['start']>, promise: Promise<T>): Promise<T> {
    promise.then(
      () => span.end(false),
      () => span.end(true),
    );
    return promise;
  }
}

export function interceptors(): WorkflowInterceptors {
  const spans = new RunSpans(workflowInfo().runId);
  /** An outbound call in a span `name`, its context in the call's header. */
  const traced = <I extends { headers: Headers }, O>(name: string, input: I, next: (input: I) => Promise<O>) => {
    const span = spans.start(name, undefined);
    return spans.around(span, next({ ...input, headers: withContext(input.headers, span.context) }));
  };
  return {
    inbound: [
      {
        execute(input, next) {
          const span = spans.start(`RunWorkflow:${workflowInfo().workflowType}`, contextFrom(input.headers));
          spans.root = span.context;
          return spans.around(span, next(input));
        },
        handleSignal(input, next) {
          return spans.around(spans.start(`HandleSignal:${input.signalName}`, undefined), next(input));
        },
        handleUpdate(input, next) {
          const span = spans.start(`HandleUpdate:${input.name}`, undefined, { temporalUpdateId: input.updateId });
          return spans.around(span, next(input));
        },
      },
    ],
    outbound: [
      {
        scheduleActivity: (input, next) => traced(`StartActivity:${input.activityType}`, input, next),
        scheduleLocalActivity: (input, next) => traced(`StartActivity:${input.activityType}`, input, next),
        startChildWorkflowExecution: (input, next) => traced(`StartChildWorkflow:${input.workflowType}`, input, next),
        getLogAttributes(input, next) {
          const root = spans.root;
          return next(root ? { trace_id: root.traceId, span_id: root.spanId, ...input } : input);
        },
      },
    ],
  };
}
