// Deployment update activities (publishing): thin calls of the admin API through callAdminApi, which maps
// errors to Temporal failures once. The keeper triggers an update and polls it before it re-exports.
import type { DeploymentUpdate, UpdateTrigger } from '../api/types';
import { callAdminApi } from './api-call';
import type { ActivityDeps } from './deps';

/**
 * The keeper's publish that waits (for the metric an alert watches): reported by every trigger and poll,
 * so a restarted worker reports it again within a poll.
 */
export interface PublishWait {
  domain: string;
  /** Workflow time (Unix ms) the oldest publish not yet applied arrived. */
  sinceMs: number;
}

export function createPublishingActivities(deps: ActivityDeps) {
  return {
    /** POST /v1/project/update/{projectId}: the platform builds the deployment branch's head now. */
    async triggerUpdate(projectId: string, wait?: PublishWait): Promise<UpdateTrigger> {
      if (wait) deps.metrics.publishWaiting(wait.domain, wait.sinceMs);
      return callAdminApi('triggerUpdate', (signal) => deps.api.triggerUpdate(projectId, { signal }));
    },

    /** GET /v1/project/update-status/{statusId}: one status poll. */
    async getUpdateStatus(statusId: string, wait?: PublishWait): Promise<DeploymentUpdate> {
      deps.metrics.poll('update');
      if (wait) deps.metrics.publishWaiting(wait.domain, wait.sinceMs);
      return callAdminApi('getUpdateStatus', (signal) => deps.api.getUpdateStatus(statusId, { signal }));
    },

    /** A publish's commit is applied: the wait ends (or a younger publish still waits). No I/O but metrics. */
    async publishApplied(domain: string, requestedAtMs: number, stillWaitingSinceMs: number | null): Promise<void> {
      deps.metrics.publishReached(domain, requestedAtMs);
      deps.metrics.publishWaiting(domain, stillWaitingSinceMs);
    },
  };
}

export type PublishingActivities = ReturnType<typeof createPublishingActivities>;
