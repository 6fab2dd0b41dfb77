// Deployment update activities (publishing): thin calls of the admin API through callAdminApi, which maps
// errors to Temporal failures once. The keeper triggers an update and polls it before it re-exports.
import type { DeploymentUpdate, UpdateTrigger } from '../api/types';
import { callAdminApi } from './api-call';
import type { ActivityDeps } from './deps';

export function createPublishingActivities(deps: ActivityDeps) {
  return {
    /** POST /v1/project/update/{projectId}: the platform builds the deployment branch's head now. */
    async triggerUpdate(projectId: string): Promise<UpdateTrigger> {
      return callAdminApi('triggerUpdate', (signal) => deps.api.triggerUpdate(projectId, { signal }));
    },

    /** GET /v1/project/update-status/{statusId}: one status poll. */
    async getUpdateStatus(statusId: string): Promise<DeploymentUpdate> {
      deps.metrics.poll('update');
      return callAdminApi('getUpdateStatus', (signal) => deps.api.getUpdateStatus(statusId, { signal }));
    },
  };
}

export type PublishingActivities = ReturnType<typeof createPublishingActivities>;
