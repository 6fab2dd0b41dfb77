// Temporal's OpenTelemetry workflow interceptors, bundled into every worker's workflow code
// (src/worker/tracing.ts), behind a patch. Their span and trace ids come from the sandbox's Math.random,
// which is the workflow's seeded random: a history recorded without them (every execution started before
// tracing shipped) replays with other uuid4() values once they draw from it (the bundle keeper's child ids:
// a nondeterminism error). So an execution traces only from a workflow task that runs past
// patched(TRACING_PATCH); a replay of an older task takes the untraced path it was recorded with. Queries
// and update validators are not traced: they may not add a patch marker, nor draw random numbers.
import type {
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { patched } from '@temporalio/workflow';
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';

export const TRACING_PATCH = 'otel-workflow-spans';

/** Calls `traced` from the patch on, `next` before it (and on replay of tasks recorded before it). */
function gated<I, O>(traced: (input: I, next: (input: I) => O) => O) {
  return (input: I, next: (input: I) => O): O => (patched(TRACING_PATCH) ? traced(input, next) : next(input));
}

export function interceptors(): WorkflowInterceptors {
  const inbound = new OpenTelemetryInboundInterceptor();
  const outbound = new OpenTelemetryOutboundInterceptor();
  const tracedInbound: WorkflowInboundCallsInterceptor = {
    execute: gated((i, n) => inbound.execute(i, n)),
    handleSignal: gated((i, n) => inbound.handleSignal(i, n)),
    handleUpdate: gated((i, n) => inbound.handleUpdate(i, n)),
  };
  const tracedOutbound: WorkflowOutboundCallsInterceptor = {
    scheduleActivity: gated((i, n) => outbound.scheduleActivity(i, n)),
    scheduleLocalActivity: gated((i, n) => outbound.scheduleLocalActivity(i, n)),
    startChildWorkflowExecution: gated((i, n) => outbound.startChildWorkflowExecution(i, n)),
    continueAsNew: gated((i, n) => outbound.continueAsNew(i, n)),
    signalWorkflow: gated((i, n) => outbound.signalWorkflow(i, n)),
    // Reads the active span only: the trace ids on the workflow's log lines.
    getLogAttributes: (i, n) => outbound.getLogAttributes(i, n),
  };
  return { inbound: [tracedInbound], outbound: [tracedOutbound], internals: [new OpenTelemetryInternalsInterceptor()] };
}
