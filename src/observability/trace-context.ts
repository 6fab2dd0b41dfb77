// W3C trace context (https://www.w3.org/TR/trace-context/): what a caller may pass as its traceparent.
import { parseTraceparent } from '../shared/trace-ids';

/** Problems with a caller's traceparent header value (empty when it is a valid one). */
export function validateTraceparent(value: string): string[] {
  return parseTraceparent(value)
    ? []
    : ['traceparent must be 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, with ids not all zeros'];
}
