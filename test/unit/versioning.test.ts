// test-lane: parallel
// Worker Deployment Versioning settings (src/worker/versioning.ts): from the environment, the derived build id,
// and the options every Worker.create gets.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  DeploymentConfigError,
  buildIdFromWorkflowCode,
  deploymentFromEnv,
  resolveDeploymentVersion,
  workerDeploymentOptions,
} from '../../src/worker/versioning';

describe('worker versioning settings', () => {
  test('off without TEMPORAL_DEPLOYMENT_NAME (the dev demo), on with it', () => {
    assert.equal(deploymentFromEnv({}), undefined);
    assert.equal(deploymentFromEnv({ TEMPORAL_DEPLOYMENT_NAME: '  ' }), undefined);
    assert.deepEqual(workerDeploymentOptions(undefined), {});
    assert.deepEqual(deploymentFromEnv({ TEMPORAL_DEPLOYMENT_NAME: 'docs-admin' }), {
      deploymentName: 'docs-admin',
      buildId: undefined,
    });
    assert.deepEqual(deploymentFromEnv({ TEMPORAL_DEPLOYMENT_NAME: 'docs-admin', TEMPORAL_WORKER_BUILD_ID: '' }), {
      deploymentName: 'docs-admin',
      buildId: undefined,
    });
    assert.deepEqual(
      deploymentFromEnv({ TEMPORAL_DEPLOYMENT_NAME: 'docs-admin', TEMPORAL_WORKER_BUILD_ID: 'git-1a2b3c.4' }),
      {
        deploymentName: 'docs-admin',
        buildId: 'git-1a2b3c.4',
      },
    );
  });

  test('rejects a build id without a name, and names the server cannot take', () => {
    assert.throws(
      () => deploymentFromEnv({ TEMPORAL_WORKER_BUILD_ID: 'v2' }),
      (err: unknown) => err instanceof DeploymentConfigError && /TEMPORAL_DEPLOYMENT_NAME is not/.test(err.message),
    );
    assert.throws(() => deploymentFromEnv({ TEMPORAL_DEPLOYMENT_NAME: 'docs.admin' }), /no "\."/);
    assert.throws(
      () => deploymentFromEnv({ TEMPORAL_DEPLOYMENT_NAME: 'docs-admin', TEMPORAL_WORKER_BUILD_ID: 'v 2' }),
      DeploymentConfigError,
    );
  });

  test('the default build id follows the workflow code: same code same id, changed code new id', () => {
    const a = buildIdFromWorkflowCode('export function agentJob() { return 1 }');
    assert.equal(a, buildIdFromWorkflowCode('export function agentJob() { return 1 }'));
    assert.notEqual(a, buildIdFromWorkflowCode('export function agentJob() { return 2 }'));
    assert.match(a, /^wf-[0-9a-f]{16}$/);
    const bundle = { code: 'bundle code' };
    assert.deepEqual(resolveDeploymentVersion({ deploymentName: 'd' }, bundle), {
      deploymentName: 'd',
      buildId: buildIdFromWorkflowCode('bundle code'),
    });
    assert.deepEqual(resolveDeploymentVersion({ deploymentName: 'd', buildId: 'b7' }, bundle), {
      deploymentName: 'd',
      buildId: 'b7',
    });
    assert.equal(resolveDeploymentVersion(undefined, bundle), undefined);
  });

  test('versioned workers use deployment versioning with PINNED as the default behaviour', () => {
    assert.deepEqual(workerDeploymentOptions({ deploymentName: 'd', buildId: 'b' }), {
      workerDeploymentOptions: {
        useWorkerVersioning: true,
        version: { deploymentName: 'd', buildId: 'b' },
        defaultVersioningBehavior: 'PINNED',
      },
    });
  });
});
