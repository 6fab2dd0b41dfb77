// Workflow ids only the project rate limiters may hold: the payload codec leaves the payloads of
// `agent-rate-limiter:*` workflows plain (src/codec/public-payloads.ts), so a job started under such an id
// by another service would have its prompt, results and links stored unencrypted. The jobs refuse it.
import { workflowInfo } from '@temporalio/workflow';
import { RATE_LIMITER_ID_PREFIX } from '../shared/rate-limiter';

/** Problems with this run's own workflow id (empty when it is not reserved). */
export function reservedWorkflowIdProblems(): string[] {
  return workflowInfo().workflowId.startsWith(RATE_LIMITER_ID_PREFIX)
    ? [
        `workflow ids beginning "${RATE_LIMITER_ID_PREFIX}" are the project rate limiters' (their payloads are ` +
          'stored unencrypted): start this job under another id',
      ]
    : [];
}
