// `npm run server`: a Temporal dev server on 127.0.0.1:7233 with the Web UI on 8233, a persistent SQLite
// file in .data/, and the project's search attributes registered. Starts it in the background and
// returns once it is healthy; running it again finds the running server and returns.
//   --foreground   stay attached (Ctrl-C stops the server)
//   --stop         stop the server this script started
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SEARCH_ATTRIBUTE_REGISTRATION } from '../src/shared';
import { DATA_DIR, ensureTools } from './tools';

const HOST = '127.0.0.1';
const PORT = Number(process.env.TEMPORAL_PORT || 7233);
const UI_PORT = Number(process.env.TEMPORAL_UI_PORT || 8233);
const ADDRESS = `${HOST}:${PORT}`;
const PID_FILE = path.join(DATA_DIR, 'temporal.pid');
const LOG_FILE = path.join(DATA_DIR, 'temporal.log');

function cli(temporal: string, args: string[]) {
  return spawnSync(temporal, args, { encoding: 'utf8', timeout: 15_000 });
}

function healthy(temporal: string): boolean {
  const result = cli(temporal, ['operator', 'cluster', 'health', '--address', ADDRESS]);
  return result.status === 0 && result.stdout.includes('SERVING');
}

async function waitHealthy(temporal: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!healthy(temporal)) {
    if (Date.now() > deadline) throw new Error(`the dev server did not become healthy within ${timeoutMs / 1000}s; see ${LOG_FILE}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** start-dev registers them on a fresh database; this adds any missing on an older one. */
function ensureSearchAttributes(temporal: string): void {
  const listed = cli(temporal, ['operator', 'search-attribute', 'list', '--address', ADDRESS]).stdout;
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTE_REGISTRATION)) {
    if (listed.includes(name)) continue;
    const created = cli(temporal, ['operator', 'search-attribute', 'create', '--name', name, '--type', type, '--address', ADDRESS]);
    if (created.status !== 0) throw new Error(`could not register search attribute ${name}: ${created.stderr.trim()}`);
  }
}

function stop(): void {
  if (!existsSync(PID_FILE)) {
    console.log('no dev server started by this script is running');
    return;
  }
  const pid = Number(readFileSync(PID_FILE, 'utf8'));
  try {
    process.kill(pid, 'SIGTERM');
    console.log(`stopped the dev server (pid ${pid})`);
  } catch {
    console.log(`the dev server (pid ${pid}) was not running`);
  }
  rmSync(PID_FILE, { force: true });
}

async function main(): Promise<void> {
  const args = new Set(process.argv.slice(2));
  if (args.has('--stop')) return stop();

  const { cli: temporal } = await ensureTools();
  if (!temporal) throw new Error('no Temporal CLI: install Go (or put `temporal` on PATH, or set TEMPORAL_CLI)');

  if (healthy(temporal)) {
    ensureSearchAttributes(temporal);
    console.log(`Temporal dev server already running at ${ADDRESS}; Web UI http://${HOST}:${UI_PORT}`);
    return;
  }

  mkdirSync(DATA_DIR, { recursive: true });
  const serverArgs = [
    'server', 'start-dev',
    '--ip', HOST, '--port', String(PORT), '--ui-ip', HOST, '--ui-port', String(UI_PORT),
    '--db-filename', path.join(DATA_DIR, 'temporal.db'),
    '--log-level', 'warn',
    // Update-with-start (early agent job id) needs multi-operation enabled on some server versions.
    '--dynamic-config-value', 'frontend.enableExecuteMultiOperation=true',
    ...Object.entries(SEARCH_ATTRIBUTE_REGISTRATION).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
  ];

  const foreground = args.has('--foreground');
  const log = openSync(LOG_FILE, 'a');
  const child = spawn(temporal, serverArgs, {
    detached: !foreground,
    stdio: foreground ? 'inherit' : ['ignore', log, log],
  });
  writeFileSync(PID_FILE, String(child.pid));
  await waitHealthy(temporal, 60_000);
  ensureSearchAttributes(temporal);
  console.log(`Temporal dev server at ${ADDRESS}; Web UI http://${HOST}:${UI_PORT}`);
  console.log(`  data: ${path.join(DATA_DIR, 'temporal.db')}   log: ${LOG_FILE}`);
  if (foreground) {
    const shutdown = () => child.kill('SIGTERM');
    process.on('SIGINT', shutdown);
    process.on('SIGTERM', shutdown);
    await new Promise((resolve) => child.on('exit', resolve));
    rmSync(PID_FILE, { force: true });
  } else {
    console.log('  stop it with: npm run server -- --stop');
    child.unref();
  }
}

main().catch((err: unknown) => {
  console.error(`npm run server: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
