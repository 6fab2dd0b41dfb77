// All activities, built from injected dependencies. Workflows type their proxies with
// ReturnType<typeof createActivities>.
import type { ActivityDeps } from './deps';
import { createAgentActivities } from './agent';
import { createExportActivities } from './export';
import { createKeeperActivities } from './keeper';
import { createPublishingActivities } from './publishing';

export type { ActivityDeps } from './deps';

export function createActivities(deps: ActivityDeps) {
  return {
    ...createExportActivities(deps),
    ...createKeeperActivities(deps),
    ...createAgentActivities(deps),
    ...createPublishingActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;

/**
 * Activities that heartbeat through the client (send checkpoints, src/activities/send-checkpoint.ts), each
 * stored before the call goes on, and keep themselves alive the same way: the worker's keep-alive
 * (src/activities/keep-alive.ts) must not interleave with them.
 */
export const HEARTBEATING_ACTIVITIES: ReadonlySet<string> = new Set<keyof Activities>([
  'createAgentJob',
  'sendAgentMessage',
]);
