// `npm run server`: a Temporal dev server on 127.0.0.1:7233 with the Web UI on 8233, a persistent SQLite
// file in .data/, and the project's search attributes registered. Starts it in the background and
// returns once it is healthy; running it again finds the running server and returns.
//   --foreground   stay attached (Ctrl-C stops the server)
//   --stop         stop the server this script started
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ADDRESS, ensureSearchAttributes, isHealthy, LOG_FILE, startDevServer, UI_URL } from './dev-server';
import { isAlive, stopProcess } from './stop-process';
import { DATA_DIR, ensureTools } from './tools';

const PID_FILE = path.join(DATA_DIR, 'temporal.pid');

/** Stops the server and waits until it has exited, so a start right after finds the port free. */
async function stop(): Promise<void> {
  if (!existsSync(PID_FILE)) {
    console.log('no dev server started by `npm run server` is running');
    return;
  }
  const pid = Number(readFileSync(PID_FILE, 'utf8'));
  rmSync(PID_FILE, { force: true });
  if (!isAlive(pid)) {
    console.log(`the dev server (pid ${pid}) was not running`);
    return;
  }
  await stopProcess(pid, { graceMs: 20_000 });
  console.log(`stopped the dev server (pid ${pid})`);
}

async function main(): Promise<void> {
  const args = new Set(process.argv.slice(2));
  if (args.has('--stop')) return stop();

  const { cli: temporal } = await ensureTools();
  if (!temporal) throw new Error('no Temporal CLI: install Go (or put `temporal` on PATH, or set TEMPORAL_CLI)');

  if (isHealthy(temporal)) {
    ensureSearchAttributes(temporal);
    console.log(`Temporal dev server already running at ${ADDRESS}; Web UI ${UI_URL}`);
    return;
  }

  const foreground = args.has('--foreground');
  const child = await startDevServer(temporal, { detached: !foreground });
  writeFileSync(PID_FILE, String(child.pid));
  console.log(`Temporal dev server at ${ADDRESS}; Web UI ${UI_URL}`);
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
