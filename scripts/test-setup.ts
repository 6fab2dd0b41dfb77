// What `npm test` needs before its first test file: the system packages (checked, one line each when
// missing, before anything runs), the Temporal tools of .tools/ (built once, reused), and the
// production-shaped cluster (started when down, and stopped again when the run ends).
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { type ClusterComponent, clusterStatus, ensureCluster, stopCluster } from './cluster/control';
import { postgresBinDir } from './cluster/postgres';
import { ensureTools, hasClusterBinaries } from './tools';

/** typecheck, lint and format (scripts/checks.ts): `npm test` runs them beside prepareTestMachine. */
export { runChecks } from './checks';

/** Where the browser test looks for Debian's Chromium (test/integration/web-ui.test.ts). */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/** A system package the tests need and this machine lacks. */
export interface MissingPrerequisite {
  what: string;
  /** What needs it, and how to go without it. */
  why: string;
  install: string;
}

function onPath(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
}

/**
 * The system packages `npm test` cannot do without on this machine. PostgreSQL and Go only when the
 * cluster tests run (DOCS_ADMIN_SKIP_CLUSTER=1 moves them to a dev server); Chromium only when the
 * browser test runs (DOCS_ADMIN_SKIP_BROWSER=1 skips it).
 */
export function missingPrerequisites(
  env: NodeJS.ProcessEnv = process.env,
  probe: {
    postgres: () => boolean;
    chromium: () => boolean;
    go: () => boolean;
    clusterBuilt: () => boolean;
    prometheus: () => boolean;
  } = {
    postgres: () => postgresBinDir() !== undefined,
    chromium: () => existsSync(CHROMIUM_PATH),
    go: () => onPath('go'),
    clusterBuilt: hasClusterBinaries,
    prometheus: () => existsSync('/usr/bin/promtool') && existsSync('/usr/bin/prometheus'),
  },
): MissingPrerequisite[] {
  const missing: MissingPrerequisite[] = [];
  const cluster = env.DOCS_ADMIN_SKIP_CLUSTER !== '1';
  if (cluster && !probe.postgres())
    missing.push({
      what: 'PostgreSQL 15 (Debian package postgresql)',
      why: 'the cluster tests run on it; DOCS_ADMIN_SKIP_CLUSTER=1 runs them on a dev server instead',
      install: 'apt-get install -y postgresql',
    });
  if (cluster && !probe.go() && !probe.clusterBuilt())
    missing.push({
      what: 'Go (Debian package golang, or https://go.dev/dl)',
      why: 'it builds the Temporal server of the cluster tests once; DOCS_ADMIN_SKIP_CLUSTER=1 runs them on a dev server',
      install: 'apt-get install -y golang',
    });
  if (!probe.prometheus())
    missing.push({
      what: 'Prometheus (Debian package prometheus: promtool and prometheus)',
      why: 'the alert rules are unit-tested with promtool and the monitoring test runs Prometheus',
      install: 'apt-get install -y prometheus',
    });
  if (env.DOCS_ADMIN_SKIP_BROWSER !== '1' && !probe.chromium())
    missing.push({
      what: `Chromium (Debian package chromium, at ${CHROMIUM_PATH})`,
      why: 'the Web UI browser test drives it; DOCS_ADMIN_SKIP_BROWSER=1 skips that test',
      install: 'apt-get install -y chromium',
    });
  return missing;
}

export function describeMissing(missing: MissingPrerequisite[]): string[] {
  return missing.map((m) => `npm test: missing ${m.what}: install it with \`${m.install}\` (${m.why})`);
}

/** What prepareTestMachine started, for finishTestRun to stop. */
export interface Prepared {
  started: ClusterComponent[];
}

/** Builds or finds the tools and brings the cluster up; whatever this call started is returned to stop later. */
export async function prepareTestMachine(log: (line: string) => void): Promise<Prepared> {
  const began = Date.now();
  const withCluster = process.env.DOCS_ADMIN_SKIP_CLUSTER !== '1';
  await ensureTools({ cluster: withCluster });
  if (!withCluster) return { started: [] };
  const before = await clusterStatus();
  try {
    const { started } = await ensureCluster({ log: (line) => log(`  ${line}`) });
    const seconds = ((Date.now() - began) / 1000).toFixed(1);
    log(
      started.length
        ? `npm test: cluster started for this run (${started.join(', ')}), ready in ${seconds}s; it is stopped at the end`
        : `npm test: using the cluster that is already running (ready in ${seconds}s)`,
    );
    return { started };
  } catch (err) {
    // A start that failed partway: stop what was down before and may be up now.
    const wasDown: ClusterComponent[] = [];
    if (!before.ui) wasDown.push('temporal-ui');
    if (!before.server) wasDown.push('temporal-server');
    if (!before.postgres) wasDown.push('postgresql');
    await stopCluster(() => undefined, wasDown).catch(() => undefined);
    throw err;
  }
}

/** Stops what prepareTestMachine started, unless DOCS_ADMIN_KEEP_CLUSTER=1 keeps it for the next run. */
export async function finishTestRun(prepared: Prepared, log: (line: string) => void): Promise<void> {
  if (prepared.started.length === 0) return;
  if (process.env.DOCS_ADMIN_KEEP_CLUSTER === '1') {
    log('npm test: DOCS_ADMIN_KEEP_CLUSTER=1: the cluster stays up (npm run cluster -- --stop stops it)');
    return;
  }
  await stopCluster((line) => log(`npm test: ${line}`), prepared.started);
}
