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
