// test-lane: parallel
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  DEPLOYMENT_FEATURES,
  DEPLOYMENT_KINDS,
  FEATURE_TABLE,
  deploymentProblems,
} from '../../src/policies/validation/deployment';
import type { DeploymentFeature, DeploymentFeatures, DeploymentKind } from '../../src/shared/bundle-keeper';

/** The features a valid request ends up with: yes -> on, no -> off, configurable -> as asked (default off). */
function resolveFeatures(kind: DeploymentKind, features: DeploymentFeatures = {}): Record<DeploymentFeature, boolean> {
  const row = FEATURE_TABLE[kind];
  const out = {} as Record<DeploymentFeature, boolean>;
  for (const feature of DEPLOYMENT_FEATURES) {
    const availability = row[feature];
    out[feature] = availability === 'yes' ? true : availability === 'no' ? false : (features[feature] ?? false);
  }
  return out;
}

describe('deploymentProblems', () => {
  test('every kind is fine with defaults and a sink it can use', () => {
    assert.deepEqual(deploymentProblems({}), []);
    assert.deepEqual(deploymentProblems({ kind: 'cloud', sinkType: 'file' }), []);
    assert.deepEqual(deploymentProblems({ kind: 'client-hosted', sinkType: 'command' }), []);
    assert.deepEqual(deploymentProblems({ kind: 'air-gapped', sinkType: 'mirror' }), []);
  });

  test('enabling a feature the kind cannot have is a conflict naming kind and feature', () => {
    for (const feature of ['search', 'assistant', 'analytics'] as const) {
      const problems = deploymentProblems({ kind: 'air-gapped', sinkType: 'mirror', features: { [feature]: true } });
      assert.equal(problems.length, 1);
      assert.match(problems[0]!, new RegExp(`air-gapped deployment cannot have .*\\(${feature}\\)`));
    }
  });

  test('configurable features may be on or off', () => {
    assert.deepEqual(
      deploymentProblems({ kind: 'client-hosted', features: { search: true, assistant: false, analytics: true } }),
      [],
    );
    assert.deepEqual(
      deploymentProblems({ kind: 'air-gapped', sinkType: 'mirror', features: { apiPlayground: true } }),
      [],
    );
    assert.deepEqual(deploymentProblems({ kind: 'air-gapped', sinkType: 'mirror', features: { search: false } }), []);
  });

  test('turning off a feature the kind always has is a conflict', () => {
    assert.match(
      deploymentProblems({ kind: 'cloud', features: { search: false } })[0]!,
      /always has .*cannot be turned off/,
    );
    assert.match(
      deploymentProblems({ kind: 'air-gapped', sinkType: 'mirror', features: { staticExport: false } })[0]!,
      /always has/,
    );
  });

  test('an air-gapped deployment needs the mirror sink', () => {
    for (const sinkType of ['file', 'webhook', 'command'] as const) {
      assert.match(deploymentProblems({ kind: 'air-gapped', sinkType })[0]!, /air-gapped .* needs the mirror sink/);
    }
  });

  test('unknown kinds and features, and non-boolean values, are reported', () => {
    assert.match(deploymentProblems({ kind: 'on-prem' })[0]!, /must be one of cloud, client-hosted, air-gapped/);
    assert.match(deploymentProblems({ features: { darkMode: true } })[0]!, /unknown feature "darkMode"/);
    assert.match(deploymentProblems({ features: { search: 'yes' } })[0]!, /true or false/);
    assert.match(deploymentProblems({ features: ['search'] })[0]!, /object/);
  });

  test('reports several conflicts at once', () => {
    const problems = deploymentProblems({
      kind: 'air-gapped',
      sinkType: 'file',
      features: { search: true, analytics: true },
    });
    assert.equal(problems.length, 3);
  });
});

test('the table covers every kind and feature, and static export is available everywhere', () => {
  for (const kind of DEPLOYMENT_KINDS) {
    for (const feature of DEPLOYMENT_FEATURES) assert.ok(FEATURE_TABLE[kind][feature], `${kind}.${feature}`);
    assert.equal(FEATURE_TABLE[kind].staticExport, 'yes');
  }
});

test('resolveFeatures: yes is on, no is off, configurable follows the request (default off)', () => {
  assert.deepEqual(resolveFeatures('air-gapped', { apiPlayground: true }), {
    search: false,
    assistant: false,
    analytics: false,
    apiPlayground: true,
    staticExport: true,
  });
  assert.deepEqual(resolveFeatures('client-hosted', { search: true }), {
    search: true,
    assistant: false,
    analytics: false,
    apiPlayground: true,
    staticExport: true,
  });
  assert.ok(Object.values(resolveFeatures('cloud')).every(Boolean));
});
