// Each workflow type's Worker Deployment Versioning behaviour (used when the worker runs with a
// deployment name, src/worker/versioning.ts; ignored otherwise). Chosen per type, not left to the worker's default:
// - agentJob, staticExport: PINNED. They last minutes to an hour; an execution finishes on the build
//   that started it, so their code may change freely between versions.
// - bundleKeeper: AUTO_UPGRADE. It lives for months, and a pinned one would keep the old version alive
//   (never drained) for as long. It moves to the new Current Version at its next workflow task, so its
//   changes must replay against running histories: the replay corpus (npm test) checks that, and
//   patched() keeps old paths where a change would not.
// - agentRateLimiter: none. Its queue is polled unversioned by every fleet (createLimiterWorker), so any
//   build runs it and its changes must replay too. Declaring one here breaks a run begun on a version
//   and then served unversioned: the SDK reads the declaration once per run, on its first activation,
//   and the server refuses every completion ("versioning behavior cannot be specified without
//   deployment options").
//   Pinned + continue-as-new onto the new version (initialVersioningBehavior with
//   targetWorkerDeploymentVersionChanged) needs a newer server (1.32+, system.enableSendTargetVersionChanged)
//   and is experimental in SDK 1.24; the dev servers are 1.29.1 (the cluster's 1.32.2 has it, on by default,
//   but workflows must keep working on every server of the supported range, 1.29 to 1.32).
//
// The behaviour is declared only on a versioned worker: the server rejects a workflow task completion
// that carries one from a worker without a deployment version (the dev demo's). Whether the task ran on
// a versioned worker is in workflowInfo().currentDeploymentVersion (an unversioned worker has a build id
// but no deployment name), deterministic on replay.
import { setWorkflowOptions, workflowInfo, type Workflow } from '@temporalio/workflow';
import { agentJob } from './agent-job';
import { bundleKeeper } from './bundle-keeper';
import { staticExport } from './static-export';

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
