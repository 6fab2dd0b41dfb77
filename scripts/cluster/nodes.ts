// Server nodes 2..N of `npm run cluster -- --nodes N`. Each is a temporal-server running every service
// (frontend, history, matching, worker) on its own ports (layout.ts nodePorts) with node 1's
// configuration: node 1's environment (database, dynamic config, TLS) with the ports changed. The nodes
// find each other through the membership table of the shared PostgreSQL; the history shards and the
// task queue partitions spread over all of them, and move to the others when one is lost.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import { CLUSTER_DATA_DIR, nodeAddress, nodeFiles, nodePortEnv, nodePorts } from './layout';
import { launchOf, type ProcessState, runningProcess, startDetached, stopRecorded, waitUntil } from './processes';
import { stopProcess } from '../stop-process';
import { clientTlsEnv } from './tls';

const run = promisify(execFile);

/** What every node runs: `temporal-server start` without --service starts all four. */
export const NODE_SERVICES = ['frontend', 'history', 'matching', 'worker'] as const;

/** `temporal operator cluster health` against one node's frontend, with the client certificate under TLS. */
export async function isFrontendHealthy(cli: string, address: string, tls: boolean): Promise<boolean> {
  try {
    const { stdout } = await run(cli, ['operator', 'cluster', 'health', '--address', address], {
      timeout: 10_000,
      env: { ...process.env, ...(tls ? clientTlsEnv() : {}) },
    });
    return stdout.includes('SERVING');
  } catch {
    return false;
  }
}

/** The nodes after the first that have a record (running or not: a killed node keeps its record). */
export function recordedNodes(): number[] {
  if (!existsSync(CLUSTER_DATA_DIR)) return [];
  return readdirSync(CLUSTER_DATA_DIR)
    .map((name) => /^temporal-server-(\d+)\.json$/.exec(name)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

/** Node n's (n >= 2) running process, per its record. */
export function runningNode(node: number): ProcessState | undefined {
  return runningProcess(nodeFiles(node).state);
}

/** Whether a process runs with node 1's configuration: the same dynamic config file, TLS and sign-on mode. */
function sameConfig(env: NodeJS.ProcessEnv, first: NodeJS.ProcessEnv): boolean {
  return (
    env.DYNAMIC_CONFIG_FILE_PATH === first.DYNAMIC_CONFIG_FILE_PATH &&
    env.TEMPORAL_TLS_FRONTEND_CERT === first.TEMPORAL_TLS_FRONTEND_CERT &&
    env.TEMPORAL_JWT_KEY_SOURCE1 === first.TEMPORAL_JWT_KEY_SOURCE1
  );
}

/** Starts node n with node 1's environment and node n's ports; resolves once its frontend serves. */
export async function startNode(node: number, firstPid: number, cli: string, log: (line: string) => void) {
  const env = { ...launchOf(firstPid).env, ...nodePortEnv(node) };
  const tls = Boolean(env.TEMPORAL_TLS_FRONTEND_CERT);
  const files = nodeFiles(node);
  log(`Temporal server node ${node}: starting at ${nodeAddress(node)}${tls ? ' (mutual TLS)' : ''}`);
  // Node 1's binary (its release) and command line: with sign-on it also runs the internal-frontend.
  const { command, args } = launchOf(firstPid);
  const started = startDetached(command, args, {
    env,
    log: files.log,
    stateFile: files.state,
    extra: { node, dynamicConfig: env.DYNAMIC_CONFIG_FILE_PATH, tls },
  });
  const healthy = () => isFrontendHealthy(cli, nodeAddress(node), tls);
  await waitUntil(`Temporal server node ${node}`, healthy, started, files.log, 120_000);
  return started.pid;
}

/**
 * Nodes 2..count up with node 1's configuration: a running node is left as it is unless it runs
 * another dynamic config or TLS mode than node 1 (then it restarts); a node that is down is started.
 * Nodes above `count` are not touched. Returns the nodes started.
 */
export async function ensureNodes(
  count: number,
  firstPid: number,
  cli: string,
  log: (line: string) => void,
): Promise<number[]> {
  nodePorts(count);
  const first = launchOf(firstPid).env;
  const wanted = Array.from({ length: count - 1 }, (_, i) => i + 2);
  const started = await Promise.all(
    wanted.map(async (node) => {
      const running = runningNode(node);
      if (running && sameConfig(launchOf(running.pid).env, first)) return undefined;
      if (running) {
        log(`Temporal server node ${node}: restarting with node 1's configuration`);
        await stopRecorded(nodeFiles(node).state);
      }
      await startNode(node, firstPid, cli, log);
      return node;
    }),
  );
  return started.filter((n): n is number => n !== undefined);
}

/** Stops every node after the first (SIGTERM, SIGKILL after 30 s) and removes their records. */
export async function stopNodes(): Promise<string[]> {
  const stopped: string[] = [];
  for (const node of recordedNodes()) {
    const state = await stopRecorded(nodeFiles(node).state);
    if (state) stopped.push(`temporal-server node ${node} (pid ${state.pid})`);
  }
  return stopped;
}

/** SIGKILLs node n (a lost host) and returns once it is gone; its record stays, so --status shows it down. */
export async function killNode(node: number): Promise<number> {
  if (node === 1) throw new Error('killNode is for nodes 2 and up: the chaos suite restarts node 1 with restartServer');
  const state = runningNode(node);
  if (!state) throw new Error(`node ${node} is not running (npm run cluster -- --nodes ${node})`);
  await stopProcess(state.pid, { signal: 'SIGKILL' });
  return state.pid;
}
