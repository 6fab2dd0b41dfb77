// Start-to-healthy time of a dev server as the tests start one (headless, in memory, the project's search
// attributes and dynamic config): from spawn to the frontend's gRPC health check answering SERVING (asked
// once the port accepts TCP), then SIGTERM to exit. Executables alternate run by run so a busy moment of
// the machine falls on both.
//
//   npx tsx bench/dev-server-start.ts [runs] [executable...]
//
// Default executables: the project's dev server (scripts/tools.ts, devServerPath) and, when there is
// one, the Temporal CLI's `server start-dev`, for comparison.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { Connection } from '@temporalio/client';
import { DEV_SERVER_DYNAMIC_CONFIG } from '../scripts/dev-server';
import { devServerPath, findTemporalCli } from '../scripts/tools';
import { SEARCH_ATTRIBUTE_REGISTRATION } from '../src/shared/search-attributes';
import { freeLoopbackPort } from '../src/observability/free-port';

/** True once something accepts TCP on the port: cheap to ask every few ms, unlike a gRPC connect (whose retry backs off ~1 s). */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function serving(address: string): Promise<boolean> {
  try {
    const connection = await Connection.connect({ address, connectTimeout: 1_000 });
    try {
      const { status } = await connection.healthService.check({});
      return status === 1; // SERVING
    } finally {
      await connection.close();
    }
  } catch {
    return false;
  }
}

async function oneRun(executable: string): Promise<{ startMs: number; stopMs: number }> {
  const port = await freeLoopbackPort();
  const args = [
    ...['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--log-level', 'error'],
    ...DEV_SERVER_DYNAMIC_CONFIG.flatMap((value) => ['--dynamic-config-value', value]),
    ...Object.entries(SEARCH_ATTRIBUTE_REGISTRATION).flatMap(([name, type]) => [
      '--search-attribute',
      `${name}=${type}`,
    ]),
  ];
  const started = performance.now();
  const child: ChildProcess = spawn(executable, args, { stdio: 'ignore' });
  const exited = once(child, 'exit');
  const deadline = started + 60_000;
  while (!(await listening(port)) || !(await serving(`127.0.0.1:${port}`))) {
    if (child.exitCode !== null) throw new Error(`${executable} exited with ${child.exitCode} during start`);
    if (performance.now() > deadline) throw new Error(`${executable} not serving after 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const startMs = performance.now() - started;
  const stopping = performance.now();
  child.kill('SIGTERM');
  await exited;
  return { startMs, stopMs: performance.now() - stopping };
}

async function main(): Promise<void> {
  const runs = Number(process.argv[2] ?? 5);
  const cli = findTemporalCli();
  const executables = process.argv.length > 3 ? process.argv.slice(3) : [devServerPath(), ...(cli ? [cli] : [])];
  const results = new Map<string, { startMs: number; stopMs: number }[]>(executables.map((e) => [e, []]));
  for (let run = 0; run < runs; run++) {
    for (const executable of run % 2 ? [...executables].reverse() : executables) {
      const result = await oneRun(executable);
      results.get(executable)!.push(result);
      console.log(`${executable}: start ${Math.round(result.startMs)} ms, stop ${Math.round(result.stopMs)} ms`);
    }
  }
  for (const [executable, list] of results) {
    const starts = list.map((r) => r.startMs).sort((a, b) => a - b);
    const median = starts[Math.floor(starts.length / 2)] ?? NaN;
    console.log(
      `${executable}: start-to-healthy median ${Math.round(median)} ms (min ${Math.round(starts[0] ?? NaN)}, ` +
        `max ${Math.round(starts.at(-1) ?? NaN)}) over ${list.length} runs`,
    );
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
