// Worker Deployment Versioning: which deployment and build a worker declares, and the options every
// Worker.create of src/worker/ spreads in. Off unless TEMPORAL_DEPLOYMENT_NAME is set (the dev demo
// stays one command); each workflow type's behaviour (PINNED / AUTO_UPGRADE) is in
// src/workflows/versioning.ts. The variable names are those the Temporal Worker Controller injects.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type Client, isGrpcServiceError } from '@temporalio/client';
import type { Logger, WorkerOptions, WorkflowBundleOption } from '@temporalio/worker';

export const DEPLOYMENT_NAME_ENV = 'TEMPORAL_DEPLOYMENT_NAME';
export const BUILD_ID_ENV = 'TEMPORAL_WORKER_BUILD_ID';

export interface DeploymentVersion {
  deploymentName: string;
  buildId: string;
}

/** From the environment: undefined when versioning is off; buildId undefined means "derive it from the code". */
export interface DeploymentSetting {
  deploymentName: string;
  buildId?: string;
}

export class DeploymentConfigError extends Error {
  override readonly name = 'DeploymentConfigError';
}

// The server joins them as "<deploymentName>.<buildId>" in places, and the CLI takes them as flags.
const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,254}$/;
const BUILD_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;

/** TEMPORAL_DEPLOYMENT_NAME and TEMPORAL_WORKER_BUILD_ID, checked; undefined (versioning off) without a name. */
export function deploymentFromEnv(env: NodeJS.ProcessEnv): DeploymentSetting | undefined {
  const deploymentName = env[DEPLOYMENT_NAME_ENV]?.trim() ?? '';
  const buildId = env[BUILD_ID_ENV]?.trim() || undefined;
  if (!deploymentName) {
    if (buildId)
      throw new DeploymentConfigError(
        `${BUILD_ID_ENV} is set but ${DEPLOYMENT_NAME_ENV} is not: set both to turn on worker versioning, or neither`,
      );
    return undefined;
  }
  if (!NAME.test(deploymentName)) {
    throw new DeploymentConfigError(
      `${DEPLOYMENT_NAME_ENV}="${deploymentName}": letters, digits, "-" and "_" only (no "."), at most 255`,
    );
  }
  if (buildId !== undefined && !BUILD_ID.test(buildId)) {
    throw new DeploymentConfigError(
      `${BUILD_ID_ENV}="${buildId}": letters, digits, ".", "-" and "_" only, at most 255`,
    );
  }
  return { deploymentName, buildId };
}

/**
 * The default build id: a hash of the bundled workflow code. It changes exactly when the code that
 * must replay changes (activities-only changes keep the version, which is safe: activities carry no
 * history), and is the same for every replica built from the same source.
 */
export function buildIdFromWorkflowCode(code: string): string {
  return `wf-${createHash('sha256').update(code).digest('hex').slice(0, 16)}`;
}

/** The code of a WorkflowBundleOption (a built bundle or a path to one). */
export function workflowBundleCode(bundle: WorkflowBundleOption): string {
  return 'code' in bundle ? bundle.code : readFileSync(bundle.codePath, 'utf8');
}

/** The version a worker runs as, or undefined when versioning is off. */
export function resolveDeploymentVersion(
  setting: DeploymentSetting | undefined,
  bundle: WorkflowBundleOption,
): DeploymentVersion | undefined {
  if (!setting) return undefined;
  return {
    deploymentName: setting.deploymentName,
    buildId: setting.buildId ?? buildIdFromWorkflowCode(workflowBundleCode(bundle)),
  };
}

/**
 * What the jobs' Worker.create spreads in (the limiter queue's worker never declares a version: see
 * createLimiterWorker). The default behaviour (for a workflow type without its own) is PINNED: the
 * safe one for code never replayed.
 */
export function workerDeploymentOptions(
  version: DeploymentVersion | undefined,
  defaultVersioningBehavior: 'PINNED' | 'AUTO_UPGRADE' = 'PINNED',
): Pick<WorkerOptions, 'workerDeploymentOptions'> {
  if (!version) return {};
  return { workerDeploymentOptions: { useWorkerVersioning: true, version, defaultVersioningBehavior } };
}

const GRPC_NOT_FOUND = 5;
const GRPC_FAILED_PRECONDITION = 9;
const GRPC_ABORTED = 10;

/**
 * The first version of a deployment becomes its Current Version by itself, so a fresh install (e.g.
 * docker compose up) needs no rollout step: without a Current Version, versioned workers get no tasks.
 * Later versions never promote themselves: the operator makes them current (docs/operations.md "Deploying a new
 * version"). Waits until the server knows this version (it learns it from the worker's polls).
 * Resolves with true when it set the version current, false when another one already is.
 */
export async function becomeCurrentIfNone(
  client: Client,
  version: DeploymentVersion,
  {
    logger,
    timeoutMs = 60_000,
    intervalMs = 500,
    signal,
  }: { logger?: Logger; timeoutMs?: number; intervalMs?: number; signal?: AbortSignal } = {},
): Promise<boolean> {
  const { namespace } = client.options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (signal?.aborted) return false;
    try {
      const described = await client.workflowService.describeWorkerDeployment({
        namespace,
        deploymentName: version.deploymentName,
      });
      const info = described.workerDeploymentInfo;
      const current = info?.routingConfig?.currentDeploymentVersion;
      if (current?.buildId) return false;
      const known = info?.versionSummaries?.some((v) => v.deploymentVersion?.buildId === version.buildId);
      if (known) {
        await client.workflowService.setWorkerDeploymentCurrentVersion({
          namespace,
          deploymentName: version.deploymentName,
          buildId: version.buildId,
          conflictToken: described.conflictToken,
          identity: client.options.identity,
        });
        logger?.info('worker deployment had no current version: this one is current now', { ...version });
        return true;
      }
    } catch (err) {
      // Not known yet (no poll arrived), or another worker changed it first: look again.
      const expected =
        isGrpcServiceError(err) && [GRPC_NOT_FOUND, GRPC_FAILED_PRECONDITION, GRPC_ABORTED].includes(err.code);
      if (!expected) throw err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `worker deployment ${version.deploymentName}: version ${version.buildId} did not become known to the server within ${timeoutMs / 1000} s`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
