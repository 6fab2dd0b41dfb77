// What the workflow sandbox sends the worker for each finished span (sink WORKFLOW_SPANS_SINK), plain JSON.
import type { Sink, Sinks } from '@temporalio/workflow';

export const WORKFLOW_SPANS_SINK = 'docsAdminSpans';

export interface WorkflowSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  /** Workflow time (ms since epoch): the start of the workflow task the span began in. */
  startMs: number;
  endMs: number;
  failed: boolean;
  attributes: Record<string, string | number>;
}

export interface WorkflowSpanSinks extends Sinks {
  [WORKFLOW_SPANS_SINK]: Sink & { export(spans: WorkflowSpan[]): void };
}
