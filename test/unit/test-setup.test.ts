// test-lane: parallel
// npm test's pre-flight (scripts/test-setup.ts): a machine without a system package the tests need is
// told which, and how to install it, before any test runs; the opt-outs drop exactly what they skip.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeMissing, missingPrerequisites } from '../../scripts/test-setup';

const machine = (has: {
  postgres?: boolean;
  chromium?: boolean;
  go?: boolean;
  clusterBuilt?: boolean;
  prometheus?: boolean;
}) => ({
  postgres: () => has.postgres ?? true,
  chromium: () => has.chromium ?? true,
  go: () => has.go ?? true,
  clusterBuilt: () => has.clusterBuilt ?? false,
  prometheus: () => has.prometheus ?? true,
});

test('a complete machine lacks nothing', () => {
  assert.deepEqual(missingPrerequisites({}, machine({})), []);
});

test('without PostgreSQL and Chromium: one line each, naming the package and its install command', () => {
  const lines = describeMissing(missingPrerequisites({}, machine({ postgres: false, chromium: false })));
  assert.equal(lines.length, 2);
  assert.match(lines[0] ?? '', /^npm test: missing PostgreSQL 15 .*`apt-get install -y postgresql`/);
  assert.match(lines[1] ?? '', /^npm test: missing Chromium .*`apt-get install -y chromium`/);
  for (const line of lines) assert.doesNotMatch(line, /\n/);
});

test('Go is needed only while the cluster binaries are not built yet', () => {
  assert.match(missingPrerequisites({}, machine({ go: false }))[0]?.what ?? '', /^Go/);
  assert.deepEqual(missingPrerequisites({}, machine({ go: false, clusterBuilt: true })), []);
});

test('DOCS_ADMIN_SKIP_CLUSTER=1 needs neither PostgreSQL nor Go; DOCS_ADMIN_SKIP_BROWSER=1 no Chromium', () => {
  const bare = machine({ postgres: false, go: false, chromium: false });
  const withoutCluster = missingPrerequisites({ DOCS_ADMIN_SKIP_CLUSTER: '1' }, bare).map((m) => m.what);
  assert.deepEqual(withoutCluster.length, 1);
  assert.match(withoutCluster[0] ?? '', /^Chromium/);
  assert.deepEqual(missingPrerequisites({ DOCS_ADMIN_SKIP_CLUSTER: '1', DOCS_ADMIN_SKIP_BROWSER: '1' }, bare), []);
});

test('without Prometheus: one line naming promtool and the install command', () => {
  const lines = describeMissing(missingPrerequisites({ DOCS_ADMIN_SKIP_CLUSTER: '1' }, machine({ prometheus: false })));
  assert.equal(lines.length, 1);
  assert.match(lines[0] ?? '', /^npm test: missing Prometheus .*promtool.*`apt-get install -y prometheus`/);
});
