// Finds, and when asked builds, the Temporal servers this project runs on: the Temporal CLI (dev
// server with the Web UI), the Java time-skipping test server, and the production server, its SQL
// tool and the UI server that `npm run cluster` runs. All live in the git-ignored .tools/.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '..');
export const TOOLS_DIR = process.env.DOCS_ADMIN_TOOLS_DIR || path.join(ROOT, '.tools');
export const DATA_DIR = path.join(ROOT, '.data');
const TOOLS_BIN = path.join(TOOLS_DIR, 'bin');
const CACHED_CLI = path.join(TOOLS_BIN, 'temporal');
const TEST_SERVER_LIB = path.join(TOOLS_DIR, 'test-server', 'lib');
const TEST_SERVER_POM = path.join(ROOT, 'scripts', 'test-server', 'pom.xml');
export const TEST_SERVER_WRAPPER = path.join(ROOT, 'scripts', 'temporal-test-server');

function onPath(command: string): string | undefined {
  const found = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
  const resolved = found.stdout.trim();
  return found.status === 0 && resolved ? resolved : undefined;
}

/** The Temporal CLI, in order: $TEMPORAL_CLI, `temporal` on PATH, the cached build in .tools/bin. */
export function findTemporalCli(): string | undefined {
  const fromEnv = process.env.TEMPORAL_CLI;
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`TEMPORAL_CLI points at ${fromEnv}, which does not exist`);
    return fromEnv;
  }
  return onPath('temporal') ?? (hasCachedCli() ? CACHED_CLI : undefined);
}

export function hasTestServer(): boolean {
  return existsSync(TEST_SERVER_LIB) && readdirSync(TEST_SERVER_LIB).some((f) => f.startsWith('temporal-test-server-'));
}

/** Runs a command with an elapsed-time heartbeat that shows its last line of output; resolves with its stdout. */
function runWithProgress(label: string, command: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let lastLine = '';
    let stdout = '';
    const show = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) {
        if (line.trim()) lastLine = line.trim();
      }
    };
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      show(chunk);
    });
    child.stderr.on('data', show);
    const ticker = setInterval(() => {
      const seconds = Math.round((Date.now() - started) / 1000);
      process.stderr.write(`  [${label}] ${seconds}s  ${lastLine.slice(0, 100)}\n`);
    }, 10_000);
    child.on('error', (err) => {
      clearInterval(ticker);
      reject(err);
    });
    child.on('exit', (code) => {
      clearInterval(ticker);
      if (code === 0) resolve(stdout);
      else reject(new Error(`${label} failed (exit ${code}): ${lastLine}`));
    });
  });
}

/** The Go module that pins the Temporal CLI (its go.mod says why 1.5.1). */
const TEMPORAL_CLI_GO_MODULE_DIR = path.join(ROOT, 'scripts', 'temporal-cli');
const TEMPORAL_CLI_PKG = 'github.com/temporalio/cli/cmd/temporal';

/**
 * Puts the Go tool `pkg` of the module in `moduleDir` at `dest`: `go tool -n` builds it into Go's build
 * cache the first time (minutes on a cold cache) and names the cached binary, which is copied here under
 * a temporary name and renamed (a concurrent run never sees half a binary). A fresh clone on a machine
 * that built it before copies it in a second instead of linking it again.
 */
async function installGoTool(label: string, moduleDir: string, pkg: string, dest: string, env: NodeJS.ProcessEnv) {
  const printed = await runWithProgress(label, 'go', ['tool', '-C', moduleDir, '-n', pkg], env);
  const cached = printed.trim().split('\n').at(-1) ?? '';
  if (!path.isAbsolute(cached) || !existsSync(cached))
    throw new Error(`${label}: \`go tool -n ${pkg}\` named no binary (${cached || 'nothing'})`);
  mkdirSync(path.dirname(dest), { recursive: true });
  const partial = `${dest}.partial-${process.pid}`;
  try {
    copyFileSync(cached, partial);
    chmodSync(partial, 0o755);
    renameSync(partial, dest);
  } finally {
    rmSync(partial, { force: true });
  }
}

/** Records which go.mod/go.sum the CLI in .tools/bin was built from, so a version bump rebuilds it. */
const CLI_STAMP = path.join(TOOLS_BIN, '.temporal-cli.stamp');

function hasCachedCli(): boolean {
  return existsSync(CACHED_CLI) && builtFrom(CLI_STAMP, TEMPORAL_CLI_GO_MODULE_DIR);
}

/** Builds the Temporal CLI (scripts/temporal-cli's tool) into .tools/bin. Minutes on a cold Go cache. */
export async function buildTemporalCli(): Promise<string> {
  if (!onPath('go')) {
    throw new Error('Go is not installed: the test harness and `npm run server` fall back to the SDK download');
  }
  process.stderr.write(
    `Building the Temporal CLI (Go module ${path.relative(ROOT, TEMPORAL_CLI_GO_MODULE_DIR)}) into ${path.dirname(CACHED_CLI)}.\n` +
      'First time only: 3-5 minutes on a cold Go cache. Progress every 10s:\n',
  );
  await installGoTool('go tool temporal', TEMPORAL_CLI_GO_MODULE_DIR, TEMPORAL_CLI_PKG, CACHED_CLI, {
    ...process.env,
    GOFLAGS: process.env.GOFLAGS ?? '-buildvcs=false',
    GOTOOLCHAIN: toolchainFor(TEMPORAL_CLI_GO_MODULE_DIR),
  });
  stampBuild(CLI_STAMP, TEMPORAL_CLI_GO_MODULE_DIR);
  process.stderr.write(`Temporal CLI ready: ${CACHED_CLI}\n`);
  return CACHED_CLI;
}

/** The Go module (go.mod, go.sum) that pins the production binaries of `npm run cluster`. */
export const CLUSTER_GO_MODULE_DIR = path.join(ROOT, 'scripts', 'cluster');
/** The modules of the older server releases a data folder is upgraded through: releases/<major.minor>/. */
export const RELEASES_GO_MODULE_DIR = path.join(CLUSTER_GO_MODULE_DIR, 'releases');

/**
 * The Go toolchain of a cluster build whose module needs a newer Go than the machine's (server 1.30.9 and
 * later need 1.26.10): the go command fetches this exact toolchain from the module proxy the first time
 * (about 76 MB). A module the machine's Go can build is built with it, so the 1.29.1 server reuses what
 * the Temporal CLI's build compiled.
 */
export const CLUSTER_GO_TOOLCHAIN = 'go1.27.3';

/** The Go version a go.mod asks for (its `go` line), e.g. 1.26.10. */
export function goVersionOf(goMod: string): string | undefined {
  return /^go (\d+\.\d+(?:\.\d+)?)\s*$/m.exec(goMod)?.[1];
}

/** GOTOOLCHAIN for building in `moduleDir`: the machine's Go when it is new enough, else CLUSTER_GO_TOOLCHAIN. */
export function toolchainFor(moduleDir: string, localGo = localGoVersion()): string {
  const wanted = goVersionOf(readFileSync(path.join(moduleDir, 'go.mod'), 'utf8'));
  return wanted && localGo && compareVersions(localGo, wanted) >= 0 ? 'local' : CLUSTER_GO_TOOLCHAIN;
}

/** The machine's own Go (`go env GOVERSION` with GOTOOLCHAIN=local), e.g. 1.26.8. */
function localGoVersion(): string | undefined {
  const found = spawnSync('go', ['env', 'GOVERSION'], {
    encoding: 'utf8',
    env: { ...process.env, GOTOOLCHAIN: 'local' },
  });
  return found.status === 0 ? found.stdout.trim().replace(/^go/, '') : undefined;
}

/** The binaries `npm run cluster` runs, built from CLUSTER_GO_MODULE_DIR into .tools/bin. */
export const CLUSTER_BINARIES = {
  server: { path: path.join(TOOLS_BIN, 'temporal-server'), pkg: 'go.temporal.io/server/cmd/server' },
  sqlTool: { path: path.join(TOOLS_BIN, 'temporal-sql-tool'), pkg: 'go.temporal.io/server/cmd/tools/sql' },
  ui: { path: path.join(TOOLS_BIN, 'temporal-ui-server'), pkg: 'github.com/temporalio/ui-server/v2/cmd/server' },
} as const;

/** The version of `module` a go.mod requires (`go.temporal.io/server v1.32.2` -> 1.32.2). */
export function pinnedVersion(goMod: string, module: string): string | undefined {
  const escaped = module.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return new RegExp(`^\\s*${escaped} v(\\d+\\.\\d+\\.\\d+)\\b`, 'm').exec(goMod)?.[1];
}

/** A Temporal server release the cluster can run: its Go module and the server and SQL tool built from it. */
export interface ServerRelease {
  /** e.g. 1.32.2 */
  version: string;
  moduleDir: string;
  server: string;
  sqlTool: string;
  /** The checkout's own release (scripts/cluster/go.mod), which `npm run cluster` runs. */
  current: boolean;
}

function releaseOf(moduleDir: string, current: boolean): ServerRelease {
  const version = pinnedVersion(readFileSync(path.join(moduleDir, 'go.mod'), 'utf8'), 'go.temporal.io/server');
  if (!version) throw new Error(`${path.join(moduleDir, 'go.mod')} pins no go.temporal.io/server`);
  return current
    ? { version, moduleDir, server: CLUSTER_BINARIES.server.path, sqlTool: CLUSTER_BINARIES.sqlTool.path, current }
    : {
        version,
        moduleDir,
        // Side by side: every release of the upgrade path keeps its own binaries.
        server: path.join(TOOLS_BIN, `temporal-server-${version}`),
        sqlTool: path.join(TOOLS_BIN, `temporal-sql-tool-${version}`),
        current,
      };
}

/** The checkout's server release: what `npm run cluster` runs and upgrades an older data folder to. */
export function currentServerRelease(): ServerRelease {
  return releaseOf(CLUSTER_GO_MODULE_DIR, true);
}

/** Every release the cluster can run, oldest first: the upgrade path's (releases/) and the current one. */
export function serverReleases(): ServerRelease[] {
  const older = existsSync(RELEASES_GO_MODULE_DIR)
    ? readdirSync(RELEASES_GO_MODULE_DIR)
        .filter((dir) => existsSync(path.join(RELEASES_GO_MODULE_DIR, dir, 'go.mod')))
        .map((dir) => releaseOf(path.join(RELEASES_GO_MODULE_DIR, dir), false))
    : [];
  return [...older.sort((a, b) => compareVersions(a.version, b.version)), currentServerRelease()];
}

/** Orders two x.y.z versions numerically (1.9.0 before 1.10.0). */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Records which go.mod/go.sum a release's binaries were built from, so a version bump rebuilds them. */
function stampOf(release: ServerRelease): string {
  return release.current
    ? path.join(TOOLS_BIN, '.temporal-cluster.stamp')
    : path.join(TOOLS_BIN, `.temporal-server-${release.version}.stamp`);
}

function moduleHash(moduleDir: string): string {
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum']) hash.update(readFileSync(path.join(moduleDir, file)));
  return hash.digest('hex');
}

/** True when `stamp` says its binaries were built from `moduleDir`'s current go.mod/go.sum. */
function builtFrom(stamp: string, moduleDir: string): boolean {
  return existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === moduleHash(moduleDir);
}

/** Notes in `stamp` that its binaries were just built from `moduleDir`'s go.mod/go.sum. */
function stampBuild(stamp: string, moduleDir: string): void {
  writeFileSync(stamp, `${moduleHash(moduleDir)}\n`);
}

/** What a release's build makes: the server and SQL tool, and for the current release the UI server. */
function binariesOf(release: ServerRelease): { name: string; path: string; pkg: string }[] {
  return [
    { name: 'server', path: release.server, pkg: CLUSTER_BINARIES.server.pkg },
    { name: 'sql tool', path: release.sqlTool, pkg: CLUSTER_BINARIES.sqlTool.pkg },
    ...(release.current ? [{ name: 'ui server', ...CLUSTER_BINARIES.ui }] : []),
  ];
}

/** True when a release's binaries exist and were built from its current go.mod/go.sum. */
export function hasReleaseBinaries(release: ServerRelease): boolean {
  if (!binariesOf(release).every((b) => existsSync(b.path))) return false;
  return builtFrom(stampOf(release), release.moduleDir);
}

/** True when all three cluster binaries exist and were built from the current go.mod/go.sum. */
export function hasClusterBinaries(): boolean {
  return hasReleaseBinaries(currentServerRelease());
}

/**
 * Builds a release's binaries, the Go tools of its pinned module (the current release: the server, its
 * SQL tool and the UI server; an older one: the server and SQL tool). Minutes each on a cold Go cache;
 * tens of seconds of linking when only its packages are cached; a second to copy each once Go's build
 * cache holds the linked binary (installGoTool).
 */
export async function buildReleaseBinaries(release: ServerRelease): Promise<void> {
  if (!onPath('go'))
    throw new Error(
      `Go is not installed: \`npm run cluster\` needs it to build the Temporal server ${release.version} once`,
    );
  const toolchain = toolchainFor(release.moduleDir);
  process.stderr.write(
    `Building the Temporal server ${release.version}${release.current ? ', its SQL tool and the UI server' : ' and its SQL tool'} ` +
      `(Go module ${path.relative(ROOT, release.moduleDir)}, GOTOOLCHAIN=${toolchain}) into ${TOOLS_BIN}.\n` +
      'First time only: minutes on a cold Go cache. Progress every 10s:\n',
  );
  const env = { ...process.env, GOFLAGS: process.env.GOFLAGS ?? '-buildvcs=false', GOTOOLCHAIN: toolchain };
  for (const binary of binariesOf(release))
    await installGoTool(`go tool ${binary.name} ${release.version}`, release.moduleDir, binary.pkg, binary.path, env);
  stampBuild(stampOf(release), release.moduleDir);
  process.stderr.write(`Temporal server ${release.version} binaries ready in ${TOOLS_BIN}\n`);
}

/** A release's binaries, built first when missing or built from another go.mod. */
export async function ensureReleaseBinaries(release: ServerRelease): Promise<void> {
  if (!hasReleaseBinaries(release)) await buildReleaseBinaries(release);
}

/** Builds the binaries `npm run cluster` runs (the current release's). */
export function buildClusterBinaries(): Promise<void> {
  return buildReleaseBinaries(currentServerRelease());
}

/** Fetches io.temporal:temporal-test-server and its runtime classpath with Maven into .tools/test-server/lib. */
export async function fetchTestServer(): Promise<void> {
  if (!onPath('mvn') || !onPath('java'))
    throw new Error('Maven and Java 17 are needed to fetch the time-skipping test server');
  process.stderr.write(`Fetching Temporal's time-skipping test server with Maven into ${TEST_SERVER_LIB} ...\n`);
  await runWithProgress(
    'mvn',
    'mvn',
    [
      '-B',
      '-q',
      '-f',
      TEST_SERVER_POM,
      'dependency:copy-dependencies',
      '-DincludeScope=runtime',
      `-DoutputDirectory=${TEST_SERVER_LIB}`,
    ],
    process.env,
  );
  process.stderr.write('Time-skipping test server ready.\n');
}

/**
 * The dev server executable for @temporalio/testing: the found or built CLI, or, on a machine
 * without Go and without a CLI, the SDK's own cached download (needs internet).
 */
export function devServerExecutable():
  { type: 'existing-path'; path: string } | { type: 'cached-download'; downloadDir: string } {
  const cli = findTemporalCli();
  return cli
    ? { type: 'existing-path', path: cli }
    : { type: 'cached-download', downloadDir: path.join(TOOLS_DIR, 'download') };
}

export function testServerExecutable():
  { type: 'existing-path'; path: string } | { type: 'cached-download'; downloadDir: string } {
  return hasTestServer()
    ? { type: 'existing-path', path: TEST_SERVER_WRAPPER }
    : { type: 'cached-download', downloadDir: path.join(TOOLS_DIR, 'download') };
}

export interface EnsureToolsOptions {
  /** Also the production server, SQL tool and UI server of `npm run cluster` (bootstrap and CI build them). */
  cluster?: boolean;
}

/** Builds whatever is missing. Safe to run again: finds the existing tools and returns. */
export async function ensureTools(
  options: EnsureToolsOptions = {},
): Promise<{ cli: string | undefined; testServer: boolean; cluster: boolean }> {
  // Side by side: each build is mostly one busy core (Go's linker, Maven's downloads).
  const note = (line: string): undefined => void process.stderr.write(`${line}\n`);
  const [cli] = await Promise.all([
    findTemporalCli() ??
      (onPath('go')
        ? buildTemporalCli()
        : note('No Temporal CLI and no Go: the SDK will download the dev server at first use.')),
    hasTestServer() ||
      (onPath('mvn')
        ? fetchTestServer()
        : note('No Maven: the SDK will download the time-skipping test server at first use.')),
    !options.cluster ||
      hasClusterBinaries() ||
      (onPath('go') ? buildClusterBinaries() : note('No Go: `npm run cluster` cannot build the Temporal server.')),
  ]);
  return { cli, testServer: hasTestServer(), cluster: hasClusterBinaries() };
}
