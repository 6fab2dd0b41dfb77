// Static export and bundle keeper activities. (Being written: issue 4.)
import type { ActivityDeps } from './deps';

export function createExportActivities(_deps: ActivityDeps) {
  return {};
}
