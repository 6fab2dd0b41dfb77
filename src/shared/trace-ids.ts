// W3C trace context (https://www.w3.org/TR/trace-context/): what a caller may pass as its traceparent, and
// the ids of spans made inside workflows, where nothing may draw random numbers (the workflow's random
// source is part of its determinism): ids derive from the run id and a per-run counter, so a replay makes
// the same ids and tracing never changes what a workflow does.

/** A span's place in a trace: ids as W3C writes them (lower-case hex). */
export interface TraceParent {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The parts of a W3C traceparent, or undefined when it is not a valid one. */
export function parseTraceparent(value: unknown): TraceParent | undefined {
  const match = typeof value === 'string' ? TRACEPARENT.exec(value.trim()) : null;
  if (!match) return undefined;
  const [, version, traceId, spanId, flags] = match as unknown as [string, string, string, string, string];
  if (version === 'ff' || /^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

/** Problems with a caller's traceparent header value (empty when it is a valid one). */
export function validateTraceparent(value: string): string[] {
  return parseTraceparent(value)
    ? []
    : ['traceparent must be 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, with ids not all zeros'];
}

export function formatTraceparent({ traceId, spanId, sampled }: TraceParent): string {
  return `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`;
}

/** 64-bit FNV-1a of `text`, as 16 hex digits (never all zeros). */
function fnv1a64(text: string): string {
  let hash = 0xcbf29ce484222325n;
  for (let i = 0; i < text.length; i++) {
    hash ^= BigInt(text.charCodeAt(i));
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return (hash === 0n ? 1n : hash).toString(16).padStart(16, '0');
}

/** The id of the `seq`-th span a run makes. */
export function workflowSpanId(runId: string, seq: number): string {
  return fnv1a64(`${runId}/${seq}`);
}

/** The trace id of a run started without a trace context: its run id (a UUID) as 32 hex digits. */
export function workflowTraceId(runId: string): string {
  const hex = runId.replace(/-/g, '').toLowerCase();
  return /^[0-9a-f]{32}$/.test(hex) && !/^0+$/.test(hex) ? hex : `${fnv1a64(`${runId}/a`)}${fnv1a64(`${runId}/b`)}`;
}
