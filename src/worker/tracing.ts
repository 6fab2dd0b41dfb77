// The worker's tracing parts. Temporal's workflow interceptors (behind a patch, src/workflows/tracing.ts)
// are in every workflow bundle, tracing on or off, so switching tracing never changes the code a running
// workflow replays with (their spans go to a sink that drops them when tracing is off); the exporter sink
// and the activity interceptors follow the switch.
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { Tracing } from '../observability/tracing';

/**
 * Bundled with the workflow code (bundleWorkflowCode's workflowInterceptorModules): the SDK ignores
 * WorkerOptions.interceptors.workflowModules when a pre-built bundle is given, as this worker always does.
 */
export const WORKFLOW_INTERCEPTOR_MODULES: string[] = [require.resolve('../workflows/tracing')];

/** The sinks every Worker running a bundle with WORKFLOW_INTERCEPTOR_MODULES needs (the SDK logs an error per call otherwise). */
export function workflowTracingSinks(tracing: Tracing | undefined): InjectedSinks<OpenTelemetrySinks> {
  return { exporter: tracing ? tracing.workflowExporter() : { export: { fn: () => undefined } } };
}

/** Temporal's activity interceptors when tracing is on; first, so that every other span is inside RunActivity. */
export function activityTracingInterceptors(tracing: Tracing | undefined): ActivityInterceptorsFactory[] {
  return tracing ? [tracing.activityInterceptors] : [];
}
