// All activities, built from injected dependencies. Workflows type their proxies with
// ReturnType<typeof createActivities>.
import type { ActivityDeps } from './deps';
import { createAgentActivities } from './agent';
import { createExportActivities } from './export';

export type { ActivityDeps } from './deps';

export function createActivities(deps: ActivityDeps) {
  return {
    ...createExportActivities(deps),
    ...createAgentActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;

/**
 * Activities that record heartbeat details of their own: send checkpoints (which also keep the attempt
 * alive) and download or apply progress. The worker's keep-alive heartbeat must not overwrite them.
 */
export const HEARTBEATING_ACTIVITIES: ReadonlySet<string> = new Set<keyof Activities>([
  'createAgentJob',
  'sendAgentMessage',
  'verifyBundle',
  'applyBundle',
]);
