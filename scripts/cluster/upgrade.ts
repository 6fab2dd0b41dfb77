// The upgrade path of a cluster's data folder. Temporal upgrades a server one minor version at a time,
// the schema first (docs.temporal.io, "Upgrade the Temporal Server": consecutive minor versions are
// compatible in schema, data and behaviour; any two others are not promised to be). So a data folder
// made with an older release is brought to the release asked by steps, one per minor version: the SQL
// tool of the step's release updates both databases (the previous server may still serve on them),
// then the step's server starts on them and serves. The folder records the release it is at
// (CLUSTER_FILES.serverRelease): after a step, once that release's server has served on the data (a
// server may move data as it starts); for a new folder, as soon as its databases are made. The releases are
// scripts/cluster/releases/<minor>/go.mod and the checkout's scripts/cluster/go.mod (scripts/tools.ts).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { compareVersions } from '../tools';
import { CLUSTER_FILES } from './layout';
import { isInitialized } from './postgres';

/** The release of a data folder that has a database and no record: every folder made before 1.32. */
export const UNRECORDED_RELEASE = '1.29.1';

/** A version's release line: 1.30.9 -> [1, 30]. */
function lineOf(version: string): [number, number] {
  const match = /^(\d+)\.(\d+)\.\d+$/.exec(version);
  if (!match) throw new Error(`${version}: not a server version (x.y.z)`);
  return [Number(match[1]), Number(match[2])];
}

/** Refused: the data folder is newer than the release asked (Temporal has no schema downgrade). */
export class DowngradeError extends Error {
  override readonly name = 'DowngradeError';
}

/**
 * The releases to go through, in order, to bring a data folder at `from` to `target`: every known
 * release after `from` up to `target`. Empty when it is there. Throws DowngradeError when `from` is newer,
 * and an error when the path skips a minor version (no release of it is known) or `target` is unknown.
 */
export function upgradeSteps(from: string, target: string, releases: readonly string[]): string[] {
  const order = compareVersions(from, target);
  if (order === 0) return [];
  if (order > 0)
    throw new DowngradeError(
      `the data folder is at Temporal server ${from}, newer than ${target}: a schema cannot be downgraded`,
    );
  if (!releases.includes(target))
    throw new Error(`no Temporal server ${target} to upgrade to (known: ${releases.join(', ')})`);
  const steps = releases
    .filter((v) => compareVersions(v, from) > 0 && compareVersions(v, target) <= 0)
    .sort(compareVersions);
  let previous = lineOf(from);
  for (const step of steps) {
    const line = lineOf(step);
    const next = line[0] === previous[0] && (line[1] === previous[1] || line[1] === previous[1] + 1);
    if (!next)
      throw new Error(
        `upgrading ${from} to ${target} needs a ${previous[0]}.${previous[1] + 1} release before ${step} ` +
          '(one minor version at a time): add its module under scripts/cluster/releases/',
      );
    previous = line;
  }
  return steps;
}

/**
 * The release a data folder is at: its record; UNRECORDED_RELEASE for a folder whose databases were set
 * up without one (before the records); undefined for a new folder (made at the release asked).
 */
export function dataFolderRelease(databaseExists: boolean, file = CLUSTER_FILES.serverRelease): string | undefined {
  if (existsSync(file)) {
    const recorded = readFileSync(file, 'utf8').trim();
    lineOf(recorded);
    return recorded;
  }
  return databaseExists ? UNRECORDED_RELEASE : undefined;
}

/** The release the cluster's data folder (CLUSTER_DATA_DIR) is at, as dataFolderRelease reads it. */
export function clusterRelease(): string | undefined {
  // Databases whose schema was ever set up (setup.sh logs it) without a record: from before the records.
  return dataFolderRelease(isInitialized() && existsSync(CLUSTER_FILES.setupLog));
}

/** Records the release the data folder is at now. */
export function recordRelease(version: string, file = CLUSTER_FILES.serverRelease): void {
  writeFileSync(file, `${version}\n`);
}
