// `npm run cluster -- --status [--json]`: one line per process of the cluster (PostgreSQL, each server
// node with its services, the UI server, the codec server, Prometheus when it runs): pid, ports, and
// whether it is up. A server node is up when its frontend answers the health check; its line also says
// how many history shards it owns (its numshards_gauge). Gathering is here, formatting is pure.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { findTemporalCli } from '../tools';
import { isCodecServerHealthy } from './codec';
import { SSO_FILES, isProviderHealthy } from './sso';
import { WEBHOOKS_FILES, WEBHOOKS_PORT, isWebhookReceiverHealthy } from './webhooks';
import { isUiHealthy, runsTls, serverRecord } from './control';
import { CLUSTER_FILES, CLUSTER_PORTS, HOST, nodeAddress, nodePorts } from './layout';
import { monitoringRunning, PROMETHEUS_PORT } from './monitoring';
import { isFrontendHealthy, NODE_SERVICES, recordedNodes, runningNode } from './nodes';
import { isPostgresReady, postgresPaths } from './postgres';
import { clusterRelease } from './upgrade';
import { launchOf, readState, runningProcess } from './processes';
import { recordedHistoryShards } from './shards';
import { clientTlsEnv } from './tls';

const run = promisify(execFile);

export type ProcessHealth = 'up' | 'down' | 'not serving';

export interface ProcessLine {
  process:
    'postgresql' | 'temporal-server' | 'temporal-ui' | 'codec-server' | 'sso-provider' | 'webhooks' | 'prometheus';
  /** Server nodes only, from 1. */
  node?: number;
  services: string[];
  pid?: number;
  ports: Record<string, number>;
  health: ProcessHealth;
  /** History shards the node owns, when it serves. */
  shards?: number;
}

export interface ClusterReport {
  processes: ProcessLine[];
  /** The cluster's history shard count (the server's, else the recorded one). */
  historyShards: number;
  /** The server release the data folder is at (scripts/cluster/upgrade.ts); absent for a folder never set up. */
  release?: string;
}

// ---- formatting ------------------------------------------------------------------------------------------

const PORT_LABELS: Record<string, string> = {
  frontendGrpc: 'grpc',
  frontendHttp: 'http',
  historyGrpc: 'history',
  internalFrontendGrpc: 'internal-frontend',
  internalFrontendHttp: 'internal-frontend-http',
  matchingGrpc: 'matching',
  workerGrpc: 'worker',
  metrics: 'metrics',
  pprof: 'pprof',
};

/** "grpc 7633 http 7643 ... membership 6633/6634/6635/6639 metrics 9633 pprof 7636", or the one port. */
export function formatPorts(ports: Record<string, number>): string {
  const entries = Object.entries(ports);
  if (entries.length === 1) return String(entries[0]![1]);
  const membership = entries.filter(([name]) => name.endsWith('Membership')).map(([, port]) => port);
  const named = entries
    .filter(([name]) => !name.endsWith('Membership'))
    .map(([name, port]) => `${PORT_LABELS[name] ?? name} ${port}`);
  if (membership.length) named.splice(5, 0, `membership ${membership.join('/')}`);
  return named.join(' ');
}

/** One aligned line per process, then the shard count. */
export function formatStatus(report: ClusterReport): string[] {
  const rows = report.processes.map((p) => [
    p.node !== undefined ? `node ${p.node}` : p.process,
    p.services.join(',') || '-',
    p.pid !== undefined ? `pid ${p.pid}` : '-',
    p.health + (p.shards !== undefined ? `, ${p.shards} shards` : ''),
    formatPorts(p.ports),
  ]);
  const widths = [0, 1, 2, 3].map((i) => Math.max(...rows.map((r) => r[i]!.length)));
  const lines = rows.map((r) => r.map((cell, i) => (i < 4 ? cell.padEnd(widths[i]!) : cell)).join('  '));
  lines.push(`history shards: ${report.historyShards} (fixed when the cluster was created; spread over the nodes)`);
  if (report.release) lines.push(`server release: ${report.release} (the data folder's; npm run cluster upgrades it)`);
  return lines;
}

// ---- gathering -------------------------------------------------------------------------------------------

/** The numshards_gauge of a node's metrics endpoint: the history shards it owns now. */
export async function ownedShards(node: number): Promise<number | undefined> {
  try {
    const res = await fetch(`http://${HOST}:${nodePorts(node).metrics}/metrics`, {
      signal: AbortSignal.timeout(3_000),
    });
    const match = /^numshards_gauge\{[^}]*service_name="history"[^}]*\} (\S+)$/m.exec(await res.text());
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

async function nodeLine(node: number, cli: string | undefined, tls: boolean): Promise<ProcessLine> {
  const state = node === 1 ? serverRecord() : runningNode(node);
  const ports: Record<string, number> = { ...nodePorts(node) };
  const env = state ? launchOf(state.pid).env : {};
  // A node started before pprof had a port runs without it.
  if (state && !env.PPROF_PORT) delete ports.pprof;
  // Only a node with sign-on (--sso) runs the internal-frontend.
  const sso = Boolean(env.TEMPORAL_JWT_KEY_SOURCE1);
  if (!sso) for (const name of Object.keys(ports)) if (name.startsWith('internalFrontend')) delete ports[name];
  const serving = state !== undefined && cli !== undefined && (await isFrontendHealthy(cli, nodeAddress(node), tls));
  const shards = serving ? await ownedShards(node) : undefined;
  return {
    process: 'temporal-server',
    node,
    services: sso ? [...NODE_SERVICES, 'internal-frontend'] : [...NODE_SERVICES],
    ...(state ? { pid: state.pid } : {}),
    ports,
    health: serving ? 'up' : state ? 'not serving' : 'down',
    ...(shards !== undefined ? { shards } : {}),
  };
}

function postgresLine(): ProcessLine {
  let pid: number | undefined;
  try {
    pid = Number(readFileSync(path.join(postgresPaths().data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    pid = undefined;
  }
  const up = isPostgresReady();
  return {
    process: 'postgresql',
    services: [],
    ...(up && pid ? { pid } : {}),
    ports: { postgres: CLUSTER_PORTS.postgres },
    health: up ? 'up' : 'down',
  };
}

function simpleLine(process: ProcessLine['process'], stateFile: string, port: number, up: boolean): ProcessLine {
  const pid = runningProcess(stateFile)?.pid ?? (up ? readState(stateFile)?.pid : undefined);
  return { process, services: [], ...(pid ? { pid } : {}), ports: { http: port }, health: up ? 'up' : 'down' };
}

async function historyShardCount(cli: string | undefined, tls: boolean, serving: boolean): Promise<number> {
  if (!cli || !serving) return recordedHistoryShards();
  try {
    const { stdout } = await run(cli, ['operator', 'cluster', 'describe', '--address', nodeAddress(1), '-o', 'json'], {
      timeout: 10_000,
      env: { ...process.env, ...(tls ? clientTlsEnv() : {}) },
    });
    return (JSON.parse(stdout) as { historyShardCount?: number }).historyShardCount ?? recordedHistoryShards();
  } catch {
    return recordedHistoryShards();
  }
}

export async function clusterReport(): Promise<ClusterReport> {
  const cli = findTemporalCli();
  const tls = runsTls();
  const nodes = [1, ...recordedNodes()];
  const nodeLines = await Promise.all(nodes.map((n) => nodeLine(n, cli, tls)));
  const processes = [postgresLine(), ...nodeLines];
  processes.push(simpleLine('temporal-ui', CLUSTER_FILES.uiState, CLUSTER_PORTS.ui, await isUiHealthy()));
  const codecUp = await isCodecServerHealthy();
  processes.push(simpleLine('codec-server', CLUSTER_FILES.codecServerState, CLUSTER_PORTS.codecServer, codecUp));
  // The OpenID provider of a cluster with sign-on (--sso).
  if (runningProcess(SSO_FILES.state))
    processes.push(simpleLine('sso-provider', SSO_FILES.state, CLUSTER_PORTS.sso, await isProviderHealthy()));
  // The webhook receiver when `npm run cluster` started it (tests and benchmarks run their own).
  if (runningProcess(WEBHOOKS_FILES.state))
    processes.push(simpleLine('webhooks', WEBHOOKS_FILES.state, WEBHOOKS_PORT, await isWebhookReceiverHealthy()));
  if (monitoringRunning())
    processes.push({ process: 'prometheus', services: [], ports: { http: PROMETHEUS_PORT }, health: 'up' });
  const historyShards = await historyShardCount(cli, tls, nodeLines[0]!.health === 'up');
  const release = clusterRelease();
  return { processes, historyShards, ...(release ? { release } : {}) };
}
