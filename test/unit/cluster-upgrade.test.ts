// test-lane: parallel
// The pure parts of the cluster's upgrade path (scripts/cluster/upgrade.ts, scripts/tools.ts): the steps
// from a data folder's release to the one asked (one minor version at a time, no downgrade), the release
// a folder is at (its record, 1.29.1 without one), and the releases the checkout pins forming that path.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import {
  DowngradeError,
  UNRECORDED_RELEASE,
  dataFolderRelease,
  recordRelease,
  upgradeSteps,
} from '../../scripts/cluster/upgrade';
import {
  CLUSTER_GO_TOOLCHAIN,
  compareVersions,
  currentServerRelease,
  goVersionOf,
  pinnedVersion,
  serverReleases,
  toolchainFor,
} from '../../scripts/tools';

const RELEASES = ['1.29.1', '1.30.9', '1.31.2', '1.32.2'];

test('a folder of 1.29.1 goes to 1.32.2 through every minor version in between, in order', () => {
  assert.deepEqual(upgradeSteps('1.29.1', '1.32.2', RELEASES), ['1.30.9', '1.31.2', '1.32.2']);
  assert.deepEqual(upgradeSteps('1.30.9', '1.31.2', RELEASES), ['1.31.2']);
  assert.deepEqual(upgradeSteps('1.32.2', '1.32.2', RELEASES), [], 'at the release asked: nothing to do');
});

test("an older patch of a known line moves to that line's release first, then on", () => {
  assert.deepEqual(upgradeSteps('1.29.0', '1.30.9', RELEASES), ['1.29.1', '1.30.9']);
  assert.deepEqual(upgradeSteps('1.31.0', '1.32.2', RELEASES), ['1.31.2', '1.32.2']);
});

test('a path that would skip a minor version is refused, naming the one missing', () => {
  assert.throws(
    () => upgradeSteps('1.29.1', '1.32.2', ['1.29.1', '1.30.9', '1.32.2']),
    /needs a 1\.31 release before 1\.32\.2 \(one minor version at a time\)/,
  );
  assert.throws(() => upgradeSteps('1.27.3', '1.32.2', RELEASES), /needs a 1\.28 release before 1\.29\.1/);
});

test('a data folder newer than the release asked is refused: no schema downgrade', () => {
  assert.throws(() => upgradeSteps('1.32.2', '1.29.1', RELEASES), DowngradeError);
  assert.throws(() => upgradeSteps('1.32.2', '1.31.2', RELEASES), /newer than 1\.31\.2: a schema cannot be downgraded/);
});

test('an unknown target is refused', () => {
  assert.throws(() => upgradeSteps('1.29.1', '1.33.0', RELEASES), /no Temporal server 1\.33\.0/);
});

const dir = mkdtempSync(path.join(os.tmpdir(), 'cluster-upgrade-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('a data folder is at its recorded release; without a record at 1.29.1 when it has a database', () => {
  const file = path.join(dir, 'server-release');
  assert.equal(dataFolderRelease(false, file), undefined, 'a new folder: made at the release asked');
  assert.equal(dataFolderRelease(true, file), UNRECORDED_RELEASE);
  assert.equal(UNRECORDED_RELEASE, '1.29.1');
  recordRelease('1.31.2', file);
  assert.equal(dataFolderRelease(true, file), '1.31.2');
  writeFileSync(file, 'latest\n');
  assert.throws(() => dataFolderRelease(true, file), /latest: not a server version/);
});

test('versions order by number, and a go.mod names its pinned version', () => {
  assert.ok(compareVersions('1.9.0', '1.10.0') < 0);
  assert.ok(compareVersions('1.32.2', '1.32.10') < 0);
  assert.equal(compareVersions('1.30.9', '1.30.9'), 0);
  const goMod = 'require (\n\tgo.temporal.io/api v1.63.5 // indirect\n\tgo.temporal.io/server v1.32.2 // indirect\n)\n';
  assert.equal(pinnedVersion(goMod, 'go.temporal.io/server'), '1.32.2');
  assert.equal(pinnedVersion(goMod, 'go.temporal.io/sdk'), undefined);
});

test("the checkout's releases form the path: 1.29.1 up to the current release, one minor version each", () => {
  const releases = serverReleases().map((r) => r.version);
  assert.equal(releases[0], UNRECORDED_RELEASE, 'folders without a record can be upgraded');
  assert.equal(releases.at(-1), currentServerRelease().version);
  assert.deepEqual(upgradeSteps(releases[0]!, releases.at(-1)!, releases), releases.slice(1));
  assert.deepEqual(new Set(serverReleases().map((r) => r.server)).size, releases.length, 'binaries side by side');
});

test("a release builds with the machine's Go when its go.mod allows, else with the pinned newer toolchain", () => {
  const [oldest] = serverReleases();
  assert.equal(toolchainFor(oldest!.moduleDir, '1.26.8'), 'local', '1.29.1 reuses what the CLI build compiled');
  assert.equal(toolchainFor(currentServerRelease().moduleDir, '1.26.8'), CLUSTER_GO_TOOLCHAIN, '1.32.2 needs 1.26.10');
  assert.equal(toolchainFor(currentServerRelease().moduleDir, '1.27.3'), 'local');
  assert.equal(goVersionOf('module x\n\ngo 1.26.10\n'), '1.26.10');
});
