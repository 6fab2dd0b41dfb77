// The Temporal server a chaos run uses: the production-shaped cluster of `npm run cluster` (default:
// the shape production has, with its default dynamic config), or a dev server this process owns
// (CHAOS_SERVER=dev-server, or when DOCS_ADMIN_SKIP_CLUSTER=1). Both can be restarted mid-flight: the
// dev server is killed and started again on its SQLite file; on the cluster only the temporal-server
// process is stopped and started again with the same configuration (PostgreSQL stays), and close()
// leaves the cluster serving whatever happened.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { clusterStatus, ensureCluster, restartServer, serverRecord, stopCluster } from '../../scripts/cluster/control';
import { CLUSTER_ADDRESS, CLUSTER_NAMESPACE } from '../../scripts/cluster/layout';
import { assertClusterLane } from '../../scripts/test-lanes';
import { findTemporalCli } from '../../scripts/tools';
import { DevServer, until } from './helpers';

const run = promisify(execFile);

export type ServerKind = 'cluster' | 'dev-server';

export interface ChaosServer {
  kind: ServerKind;
  address: string;
  namespace: string;
  /** What the run printed figures against, e.g. "cluster (production.yaml)". */
  label: string;
  /** Stops the Temporal server and starts it again at once; resolves when it answers. */
  restart(): Promise<{
    outageMs: number;
    pidBefore?: number;
    pidAfter?: number;
    config?: { before: unknown; after: unknown };
  }>;
  /** `temporal <args> --address <this>`: stdout and stderr together (the secrets scan reads them). */
  cliOutput(args: string[]): Promise<string>;
  /** The server's log since this run began (scanned for the key), when this process can read it. */
  log(): string;
  /** Dev server: stopped. Cluster: serving again (restarted if a restart failed halfway), left running. */
  close(): Promise<void>;
}

/** CHAOS_SERVER picks the server; the cluster unless DOCS_ADMIN_SKIP_CLUSTER=1 says it cannot run here. */
export function chaosServerKind(): ServerKind {
  const asked = process.env.CHAOS_SERVER;
  if (asked === 'cluster' || asked === 'dev-server') return asked;
  if (asked) throw new Error(`CHAOS_SERVER=${asked}: expected cluster or dev-server`);
  return process.env.DOCS_ADMIN_SKIP_CLUSTER === '1' ? 'dev-server' : 'cluster';
}

async function startDevServer(options: {
  restartable?: boolean;
  dynamicConfig?: Record<string, string | number | boolean>;
}): Promise<ChaosServer> {
  const dir = options.restartable ? await mkdtemp(path.join(os.tmpdir(), 'docs-admin-chaos-')) : undefined;
  const server = await DevServer.start({
    ...(dir ? { dbFile: path.join(dir, 'temporal.db') } : {}),
    ...(options.dynamicConfig ? { dynamicConfig: options.dynamicConfig } : {}),
  });
  return {
    kind: 'dev-server',
    address: server.address,
    namespace: 'default',
    label: 'dev server (tuned)',
    async restart() {
      if (!dir) throw new Error('this dev server keeps its state in memory: start it with { restartable: true }');
      const pidBefore = server.pid;
      const stoppedAt = Date.now();
      await server.restart('SIGKILL');
      return { outageMs: Date.now() - stoppedAt, pidBefore, pidAfter: server.pid };
    },
    cliOutput: (args) => server.cliOutput(args),
    log: () => server.output.text,
    async close() {
      await server.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}

async function useCluster(): Promise<ChaosServer> {
  assertClusterLane();
  const ensured = await ensureCluster();
  const cli = findTemporalCli();
  if (!cli) throw new Error('no Temporal CLI: run `npm run bootstrap`');
  const dynamicConfig = String(serverRecord()?.dynamicConfig ?? 'unknown');
  const serving = async () => (await clusterStatus()).server;
  return {
    kind: 'cluster',
    address: CLUSTER_ADDRESS,
    namespace: CLUSTER_NAMESPACE,
    label: `cluster (${path.basename(dynamicConfig)})`,
    async restart() {
      const before = serverRecord()?.dynamicConfig;
      const restarted = await restartServer('SIGTERM');
      return { ...restarted, config: { before, after: serverRecord()?.dynamicConfig } };
    },
    async cliOutput(args) {
      const { stdout, stderr } = await run(
        cli,
        [...args, '--address', CLUSTER_ADDRESS, '--namespace', CLUSTER_NAMESPACE],
        {
          timeout: 30_000,
          maxBuffer: 64 * 1024 * 1024,
        },
      );
      return stdout + stderr;
    },
    // The cluster's log is shared by every test on it and not this run's to judge.
    log: () => '',
    async close() {
      // A restart that failed halfway leaves no server: bring it back (other tests share the cluster).
      if (!(await serving())) await ensureCluster();
      await until(serving, 'the cluster to serve again', 120_000, 500);
      if (ensured.started.length > 0 && process.env.DOCS_ADMIN_KEEP_CLUSTER !== '1')
        await stopCluster(() => undefined, ensured.started);
    },
  };
}

/** The chaos run's Temporal server (see chaosServerKind). `restartable` makes a dev server persistent. */
export async function chaosServer(
  options: {
    kind?: ServerKind;
    restartable?: boolean;
    devDynamicConfig?: Record<string, string | number | boolean>;
  } = {},
): Promise<ChaosServer> {
  const kind = options.kind ?? chaosServerKind();
  return kind === 'cluster'
    ? useCluster()
    : startDevServer({
        ...(options.restartable ? { restartable: true } : {}),
        ...(options.devDynamicConfig ? { dynamicConfig: options.devDynamicConfig } : {}),
      });
}

/**
 * Terminates what an earlier run left running on these task queues. The cluster persists: a run that
 * failed or was interrupted leaves workflows that the next run's workers (same queue names, as a
 * deployment reuses its queue) would otherwise pick up and send to this run's emulator.
 */
export async function terminateLeftovers(client: Client, taskQueues: readonly string[]): Promise<number> {
  let count = 0;
  for (const queue of taskQueues) {
    for await (const wf of client.workflow.list({ query: `TaskQueue = '${queue}' AND ExecutionStatus = 'Running'` })) {
      await client.workflow
        .getHandle(wf.workflowId, wf.runId)
        .terminate('left running by an earlier chaos run')
        .catch(() => undefined);
      count++;
    }
  }
  return count;
}
