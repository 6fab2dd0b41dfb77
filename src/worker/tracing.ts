// The worker's tracing parts. The workflow interceptors (src/workflows/tracing.ts) are in every workflow
// bundle, tracing on or off, so switching tracing never changes the code a running workflow replays with
// (their spans go to a sink that drops them when tracing is off); the sink and Temporal's activity
// interceptors follow the switch.
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { Tracing } from '../observability/tracing';
import { WORKFLOW_SPANS_SINK, type WorkflowSpan, type WorkflowSpanSinks } from '../shared/workflow-spans';

/**
 * Bundled with the workflow code (bundleWorkflowCode's workflowInterceptorModules): the SDK ignores
 * WorkerOptions.interceptors.workflowModules when a pre-built bundle is given, as this worker always does.
 */
export const WORKFLOW_INTERCEPTOR_MODULES: string[] = [require.resolve('../workflows/tracing')];

/** The sinks every Worker running a bundle with WORKFLOW_INTERCEPTOR_MODULES needs (the SDK logs an error per call otherwise). */
export function workflowTracingSinks(tracing: Tracing | undefined): InjectedSinks<WorkflowSpanSinks> {
  const fn = tracing ? (_info: unknown, spans: WorkflowSpan[]) => tracing.exportWorkflowSpans(spans) : () => undefined;
  return { [WORKFLOW_SPANS_SINK]: { export: { fn } } };
}

/** Temporal's activity interceptors when tracing is on; first, so that every other span is inside RunActivity. */
export function activityTracingInterceptors(tracing: Tracing | undefined): ActivityInterceptorsFactory[] {
  return tracing ? [tracing.activityInterceptors] : [];
}
