// Agent job activities. (Being written: issue 5.)
import type { ActivityDeps } from './deps';

export function createAgentActivities(_deps: ActivityDeps) {
  return {};
}
