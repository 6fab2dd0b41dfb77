// W3C trace context (https://www.w3.org/TR/trace-context/): what a caller may pass as its traceparent.

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** Problems with a caller's traceparent header value (empty when it is a valid version-00 one). */
export function validateTraceparent(value: string): string[] {
  const match = typeof value === 'string' ? TRACEPARENT.exec(value) : null;
  if (!match) return ['traceparent must look like 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>'];
  const [, version, traceId, spanId] = match;
  if (version === 'ff') return ['traceparent version ff is invalid'];
  if (/^0+$/.test(traceId as string) || /^0+$/.test(spanId as string))
    return ['traceparent must not have an all-zero trace id or span id'];
  return [];
}
