// Each workflow type's Worker Deployment Versioning behaviour (used when the worker runs with a
// deployment name, src/worker/versioning.ts; ignored otherwise), chosen per type, not left to the
// worker's default: which, and why, in docs/operations.md, "Changing a workflow safely".
//
// The behaviour is declared only on a versioned worker: the server rejects a workflow task completion
// that carries one from a worker without a deployment version (the dev demo's). Whether the task ran on
// a versioned worker is in workflowInfo().currentDeploymentVersion (an unversioned worker has a build id
// but no deployment name), deterministic on replay.
import { setWorkflowOptions, workflowInfo, type Workflow } from '@temporalio/workflow';
import { agentJob } from './agent-job';
import { bundleKeeper } from './bundle-keeper';
import { staticExport } from './static-export';

/** The rate limiter has none on purpose: every fleet serves its queue unversioned. */
export const VERSIONING_BEHAVIOUR = {
  agentJob: 'PINNED',
  staticExport: 'PINNED',
  bundleKeeper: 'AUTO_UPGRADE',
} as const;

/** Declares `type`'s behaviour on `fn` (also used by test fixtures that wrap a workflow). */
export function declareVersioningBehaviour(type: keyof typeof VERSIONING_BEHAVIOUR, fn: Workflow): void {
  setWorkflowOptions(
    () =>
      workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: VERSIONING_BEHAVIOUR[type] } : {},
    fn,
  );
}

declareVersioningBehaviour('agentJob', agentJob);
declareVersioningBehaviour('staticExport', staticExport);
declareVersioningBehaviour('bundleKeeper', bundleKeeper);
