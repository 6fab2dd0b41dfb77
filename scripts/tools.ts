// Finds, and when asked builds, the two Temporal servers this project runs on: the Temporal CLI (dev
// server with the Web UI) and the Java time-skipping test server. Both live in the git-ignored .tools/.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '..');
export const TOOLS_DIR = process.env.DOCS_ADMIN_TOOLS_DIR || path.join(ROOT, '.tools');
export const DATA_DIR = path.join(ROOT, '.data');
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';
const CACHED_CLI = path.join(TOOLS_DIR, 'bin', 'temporal');
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
  return onPath('temporal') ?? (existsSync(CACHED_CLI) ? CACHED_CLI : undefined);
}

export function hasTestServer(): boolean {
  return existsSync(TEST_SERVER_LIB) && readdirSync(TEST_SERVER_LIB).some((f) => f.startsWith('temporal-test-server-'));
}

/** Runs a command with its output shown line by line, prefixed, and an elapsed-time heartbeat. */
function runWithProgress(label: string, command: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let lastLine = '';
    const show = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) {
        if (line.trim()) lastLine = line.trim();
      }
    };
    child.stdout.on('data', show);
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
      if (code === 0) resolve();
      else reject(new Error(`${label} failed (exit ${code}): ${lastLine}`));
    });
  });
}

/** Builds the Temporal CLI with `go install` into .tools/bin. Minutes on a cold Go cache. */
export async function buildTemporalCli(): Promise<string> {
  if (!onPath('go')) {
    throw new Error('Go is not installed: the test harness and `npm run server` fall back to the SDK download');
  }
  process.stderr.write(
    `Building the Temporal CLI (${TEMPORAL_CLI_MODULE}) with Go into ${path.dirname(CACHED_CLI)}.\n` +
      'First time only: 3-5 minutes on a cold Go module cache. Progress every 10s:\n',
  );
  await runWithProgress('go install', 'go', ['install', '-v', TEMPORAL_CLI_MODULE], {
    ...process.env,
    GOBIN: path.dirname(CACHED_CLI),
    GOFLAGS: process.env.GOFLAGS ?? '-buildvcs=false',
  });
  process.stderr.write(`Temporal CLI ready: ${CACHED_CLI}\n`);
  return CACHED_CLI;
}

/** Fetches io.temporal:temporal-test-server and its runtime classpath with Maven into .tools/test-server/lib. */
export async function fetchTestServer(): Promise<void> {
  if (!onPath('mvn') || !onPath('java')) throw new Error('Maven and Java 17 are needed to fetch the time-skipping test server');
  process.stderr.write(`Fetching Temporal's time-skipping test server with Maven into ${TEST_SERVER_LIB} ...\n`);
  await runWithProgress(
    'mvn',
    'mvn',
    ['-B', '-q', '-f', TEST_SERVER_POM, 'dependency:copy-dependencies', '-DincludeScope=runtime', `-DoutputDirectory=${TEST_SERVER_LIB}`],
    process.env,
  );
  process.stderr.write('Time-skipping test server ready.\n');
}

/**
 * The dev server executable for @temporalio/testing: the found or built CLI, or, on a machine
 * without Go and without a CLI, the SDK's own cached download (needs internet).
 */
export function devServerExecutable(): { type: 'existing-path'; path: string } | { type: 'cached-download'; downloadDir: string } {
  const cli = findTemporalCli();
  return cli ? { type: 'existing-path', path: cli } : { type: 'cached-download', downloadDir: path.join(TOOLS_DIR, 'download') };
}

export function testServerExecutable(): { type: 'existing-path'; path: string } | { type: 'cached-download'; downloadDir: string } {
  return hasTestServer()
    ? { type: 'existing-path', path: TEST_SERVER_WRAPPER }
    : { type: 'cached-download', downloadDir: path.join(TOOLS_DIR, 'download') };
}

/** Builds whatever is missing. Safe to run again: finds the existing tools and returns. */
export async function ensureTools(): Promise<{ cli: string | undefined; testServer: boolean }> {
  let cli = findTemporalCli();
  if (!cli) {
    if (onPath('go')) cli = await buildTemporalCli();
    else process.stderr.write('No Temporal CLI and no Go: the SDK will download the dev server at first use.\n');
  }
  if (!hasTestServer()) {
    if (onPath('mvn')) await fetchTestServer();
    else process.stderr.write('No Maven: the SDK will download the time-skipping test server at first use.\n');
  }
  return { cli, testServer: hasTestServer() };
}
