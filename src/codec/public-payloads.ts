// Which payloads stay plain under payload encryption. The project rate limiters carry nothing private
// (project ids, request keys, times) and are shared by every fleet of a namespace whatever its key
// file, so what is sent to them, what they answer and what they write never depends on one fleet's key
// (docs/security.md). Everything else stays encrypted.
import type { SerializationContext } from '@temporalio/common';
import { RATE_LIMITER_ID_PREFIX } from '../shared/rate-limiter';

/** A payload owned by a workflow whose payloads are public: a project's agentRateLimiter. */
export function isPublicPayloadContext(context: SerializationContext | undefined): boolean {
  return context?.type === 'workflow' && context.workflowId.startsWith(RATE_LIMITER_ID_PREFIX);
}
