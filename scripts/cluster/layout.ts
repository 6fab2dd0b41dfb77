// Where everything of `npm run cluster` lives, the ports it takes, and the environment each component
// starts with. The server config, dynamic config and setup script are the files docker-compose.yml
// mounts (deploy/temporal/); only the values passed in through the environment differ.
import path from 'node:path';
import { stringify } from 'yaml';
import { DEFAULT_NAMESPACE } from '../../src/shared/defaults';
import { SEARCH_ATTRIBUTE_REGISTRATION } from '../../src/shared/search-attributes';
import { DEV_SERVER_DYNAMIC_CONFIG } from '../dev-server';
import { CLUSTER_BINARIES, DATA_DIR, ROOT } from '../tools';

export const HOST = '127.0.0.1';

/**
 * Every port the cluster binds, all on 127.0.0.1: Temporal's standard 72xx/69xx ports moved to
 * 76xx/66xx, so the cluster runs beside the dev server (7233, UI 8233) and a stock Temporal.
 */
export const CLUSTER_PORTS = {
  postgres: 5633,
  frontendGrpc: 7633,
  frontendHttp: 7643,
  historyGrpc: 7634,
  matchingGrpc: 7635,
  workerGrpc: 7639,
  frontendMembership: 6633,
  historyMembership: 6634,
  matchingMembership: 6635,
  workerMembership: 6639,
  /** The internal-frontend of a cluster with sign-on (--sso): the server's own services call it. */
  internalFrontendGrpc: 7637,
  internalFrontendHttp: 7647,
  internalFrontendMembership: 6637,
  /** The server's Prometheus endpoint (/metrics). */
  metrics: 9633,
  /** Go's pprof (/debug/pprof/) of the server. */
  pprof: 7636,
  ui: 8633,
  /** The codec server the UI decodes payloads with (npm run codec-server's default port). */
  codecServer: 8634,
  /** The OpenID provider of a cluster with sign-on (npm run sso-provider; 8635 is the webhook receiver's). */
  sso: 8636,
} as const;

export const CLUSTER_ADDRESS = `${HOST}:${CLUSTER_PORTS.frontendGrpc}`;

// ---- server nodes (npm run cluster -- --nodes N) -----------------------------------------------------

/** Node n's ports are node 1's plus NODE_PORT_STEP * (n - 1): node 2 serves gRPC on 7733, metrics on 9733. */
export const NODE_PORT_STEP = 100;
/** Node 10's frontend would be 8533 and node 11's the UI's 8633: nine nodes at most. */
export const MAX_NODES = 9;

/** The ports a server node takes (its own gRPC, membership, metrics and pprof ports per service). */
export type NodePorts = Omit<typeof CLUSTER_PORTS, 'postgres' | 'ui' | 'codecServer' | 'sso'>;

/** Node n's ports (n from 1: node 1's are CLUSTER_PORTS). */
export function nodePorts(node: number): NodePorts {
  if (!Number.isInteger(node) || node < 1 || node > MAX_NODES)
    throw new RangeError(`node ${node}: nodes are numbered 1 to ${MAX_NODES}`);
  const { postgres: _postgres, ui: _ui, codecServer: _codec, sso: _sso, ...ports } = CLUSTER_PORTS;
  const shift = NODE_PORT_STEP * (node - 1);
  return Object.fromEntries(Object.entries(ports).map(([name, port]) => [name, port + shift])) as NodePorts;
}

/** Node n's frontend: where its clients (and the health check) connect. */
export const nodeAddress = (node: number) => `${HOST}:${nodePorts(node).frontendGrpc}`;
export const CLUSTER_UI_URL = `http://${HOST}:${CLUSTER_PORTS.ui}`;
export const CLUSTER_CODEC_URL = `http://${HOST}:${CLUSTER_PORTS.codecServer}`;
/**
 * With sign-on the codec server serves HTTPS (the frontend's certificate, scripts/cluster/tls.ts): the Web
 * UI sends a person's access token only to an https:// codec endpoint.
 */
export const CLUSTER_CODEC_HTTPS_URL = `https://${HOST}:${CLUSTER_PORTS.codecServer}`;
export const CLUSTER_NAMESPACE = DEFAULT_NAMESPACE;

// ---- the files shared with docker-compose.yml ------------------------------------------------------

/** The server and the UI server take `--root DEPLOY_ROOT --config CONFIG_DIR --env <name>`. */
export const DEPLOY_ROOT = path.join(ROOT, 'deploy');
export const CONFIG_DIR = 'temporal';
export const DEPLOY_DIR = path.join(DEPLOY_ROOT, CONFIG_DIR);
/** --env of the server: it reads DEPLOY_DIR/config.yaml. */
export const SERVER_CONFIG_ENV = 'config';
/** --env of the UI server: DEPLOY_DIR/ui.yaml. */
export const UI_CONFIG_ENV = 'ui';
export const SERVER_CONFIG_FILE = path.join(DEPLOY_DIR, `${SERVER_CONFIG_ENV}.yaml`);
export const PRODUCTION_DYNAMIC_CONFIG = path.join(DEPLOY_DIR, 'dynamicconfig', 'production.yaml');
export const SETUP_SCRIPT = path.join(DEPLOY_DIR, 'setup.sh');

/** The server's command line after --root: the same in docker-compose.yml. */
export const SERVER_ARGS = ['--config', CONFIG_DIR, '--env', SERVER_CONFIG_ENV, '--allow-no-auth', 'start'];
/** With sign-on: the four default services and the internal-frontend (config.yaml). */
export const SSO_SERVER_ARGS = [
  ...SERVER_ARGS,
  ...['frontend', 'internal-frontend', 'history', 'matching', 'worker'].flatMap((service) => ['--service', service]),
];

// ---- local state (git-ignored) ----------------------------------------------------------------------

/**
 * The cluster's data folder: .data/cluster, or DOCS_ADMIN_CLUSTER_DIR (the upgrade check sets up a
 * cluster of its own there, so it never touches the one in .data/cluster; the ports stay the same).
 */
export const CLUSTER_DATA_DIR = process.env.DOCS_ADMIN_CLUSTER_DIR
  ? path.resolve(process.env.DOCS_ADMIN_CLUSTER_DIR)
  : path.join(DATA_DIR, 'cluster');
export const CLUSTER_FILES = {
  postgresData: path.join(CLUSTER_DATA_DIR, 'postgres'),
  postgresLog: path.join(CLUSTER_DATA_DIR, 'postgres.log'),
  /** The database password, generated when the database is created (mode 0600). */
  postgresPassword: path.join(CLUSTER_DATA_DIR, 'postgres-password'),
  /** Node 1's log and record; node n's are nodeFiles(n). */
  serverLog: path.join(CLUSTER_DATA_DIR, 'temporal-server.log'),
  serverState: path.join(CLUSTER_DATA_DIR, 'temporal-server.json'),
  /**
   * The number of history shards the cluster was created with (--history-shards; absent: config.yaml's
   * default, 4). The server persists the count at its first start and ignores any other value after.
   */
  historyShards: path.join(CLUSTER_DATA_DIR, 'history-shards'),
  /**
   * The server release the data folder's schema and data are at (scripts/cluster/upgrade.ts): written when
   * a new folder's databases are made, and after each upgrade step. A folder set up without it is 1.29.1's.
   */
  serverRelease: path.join(CLUSTER_DATA_DIR, 'server-release'),
  uiLog: path.join(CLUSTER_DATA_DIR, 'temporal-ui.log'),
  uiState: path.join(CLUSTER_DATA_DIR, 'temporal-ui.json'),
  setupLog: path.join(CLUSTER_DATA_DIR, 'setup.log'),
  /** Written once the namespace and search attributes are in place for the running server. */
  setupDone: path.join(CLUSTER_DATA_DIR, 'setup.done'),
  tunedDynamicConfig: path.join(CLUSTER_DATA_DIR, 'dynamicconfig-tuned.yaml'),
  /** PAYLOAD_ENCRYPTION_KEYS_FILE of workers and clients of the cluster: one key, made on first run (mode 0600). */
  payloadKeys: path.join(CLUSTER_DATA_DIR, 'payload-keys'),
  /** KEEPER_SINKS_FILE of the cluster's workers: a file and a mirror sink below `deployments`, made on first run. */
  sinks: path.join(CLUSTER_DATA_DIR, 'sinks.yaml'),
  deployments: path.join(CLUSTER_DATA_DIR, 'deployments'),
  /** CODEC_SERVER_TOKEN_FILE of the cluster's codec server: one token, made on first run (mode 0600). */
  codecToken: path.join(CLUSTER_DATA_DIR, 'codec-token'),
  codecServerLog: path.join(CLUSTER_DATA_DIR, 'codec-server.log'),
  codecServerState: path.join(CLUSTER_DATA_DIR, 'codec-server.json'),
};

/** Node n's log and record: node 1's are today's temporal-server.{log,json}, node 2's temporal-server-2.{log,json}. */
export function nodeFiles(node: number): { log: string; state: string } {
  if (node === 1) return { log: CLUSTER_FILES.serverLog, state: CLUSTER_FILES.serverState };
  nodePorts(node);
  return {
    log: path.join(CLUSTER_DATA_DIR, `temporal-server-${node}.log`),
    state: path.join(CLUSTER_DATA_DIR, `temporal-server-${node}.json`),
  };
}

/** The codec server's entry module (npm run codec-server), run by node through tsx. */
export const CODEC_SERVER_ARGS = [
  '--import',
  'tsx',
  path.join(ROOT, 'src', 'codec-server.ts'),
  '--port',
  String(CLUSTER_PORTS.codecServer),
  '--host',
  HOST,
];

export const POSTGRES_USER = 'temporal';

// ---- environments ------------------------------------------------------------------------------------

/** Only what the programs need from this process: the config templates read nothing else by accident. */
function baseEnv(): NodeJS.ProcessEnv {
  const { PATH, HOME, TZ } = process.env;
  return Object.fromEntries(Object.entries({ PATH, HOME, TZ }).filter(([, v]) => v !== undefined));
}

/** deploy/temporal/config.yaml's port variables for node n. */
export function nodePortEnv(node: number): NodeJS.ProcessEnv {
  const p = nodePorts(node);
  const first = nodePorts(1);
  return {
    FRONTEND_GRPC_PORT: String(p.frontendGrpc),
    FRONTEND_HTTP_PORT: String(p.frontendHttp),
    FRONTEND_MEMBERSHIP_PORT: String(p.frontendMembership),
    HISTORY_GRPC_PORT: String(p.historyGrpc),
    HISTORY_MEMBERSHIP_PORT: String(p.historyMembership),
    MATCHING_GRPC_PORT: String(p.matchingGrpc),
    MATCHING_MEMBERSHIP_PORT: String(p.matchingMembership),
    WORKER_GRPC_PORT: String(p.workerGrpc),
    WORKER_MEMBERSHIP_PORT: String(p.workerMembership),
    INTERNAL_FRONTEND_GRPC_PORT: String(p.internalFrontendGrpc),
    INTERNAL_FRONTEND_HTTP_PORT: String(p.internalFrontendHttp),
    INTERNAL_FRONTEND_MEMBERSHIP_PORT: String(p.internalFrontendMembership),
    PROMETHEUS_ENDPOINT: `${HOST}:${p.metrics}`,
    PPROF_PORT: String(p.pprof),
    // The cluster's address in its metadata (one record in the database): every node writes node 1's,
    // else each start would overwrite it with its own.
    CLUSTER_RPC_PORT: String(first.frontendGrpc),
    CLUSTER_HTTP_PORT: String(first.frontendHttp),
  };
}

/** deploy/temporal/config.yaml's variables (the names of Temporal's server image) for node 1. */
export function serverEnv(password: string, dynamicConfigFile: string, historyShards: number): NodeJS.ProcessEnv {
  return {
    ...baseEnv(),
    DB: 'postgres12_pgx',
    POSTGRES_SEEDS: HOST,
    DB_PORT: String(CLUSTER_PORTS.postgres),
    POSTGRES_USER,
    POSTGRES_PWD: password,
    BIND_ON_IP: HOST,
    TEMPORAL_BROADCAST_ADDRESS: HOST,
    ...nodePortEnv(1),
    NUM_HISTORY_SHARDS: String(historyShards),
    LOG_LEVEL: 'warn',
    DYNAMIC_CONFIG_FILE_PATH: dynamicConfigFile,
  };
}

/** setup.sh schema: the SQL tool's own variables (the tool of the release the schema goes to). */
export function schemaEnv(password: string, sqlTool: string = CLUSTER_BINARIES.sqlTool.path): NodeJS.ProcessEnv {
  return {
    ...baseEnv(),
    TEMPORAL_SQL_TOOL: sqlTool,
    SQL_PLUGIN: 'postgres12_pgx',
    SQL_HOST: HOST,
    SQL_PORT: String(CLUSTER_PORTS.postgres),
    SQL_USER: POSTGRES_USER,
    SQL_PASSWORD: password,
  };
}

/** setup.sh namespace: the temporal CLI's variables and the project's search attributes. */
export function namespaceEnv(temporalCli: string): NodeJS.ProcessEnv {
  return {
    ...baseEnv(),
    TEMPORAL_CLI: temporalCli,
    TEMPORAL_ADDRESS: CLUSTER_ADDRESS,
    TEMPORAL_NAMESPACE: CLUSTER_NAMESPACE,
    NAMESPACE_RETENTION: '7d',
    DOCS_ADMIN_SEARCH_ATTRIBUTES: Object.keys(SEARCH_ATTRIBUTE_REGISTRATION).join(' '),
  };
}

/** deploy/temporal/ui.yaml's variables (the names of Temporal's UI image, plus the bind address). */
export function uiEnv(): NodeJS.ProcessEnv {
  return {
    ...baseEnv(),
    TEMPORAL_ADDRESS: CLUSTER_ADDRESS,
    TEMPORAL_UI_HOST: HOST,
    TEMPORAL_UI_PORT: String(CLUSTER_PORTS.ui),
    TEMPORAL_DEFAULT_NAMESPACE: CLUSTER_NAMESPACE,
    TEMPORAL_CODEC_ENDPOINT: CLUSTER_CODEC_URL,
  };
}

/**
 * The codec server's environment: the cluster's key and token files, browsers from the cluster's UI only,
 * and the one namespace whose workers hold those keys.
 */
export function codecServerEnv(): NodeJS.ProcessEnv {
  return {
    ...baseEnv(),
    PAYLOAD_ENCRYPTION_KEYS_FILE: CLUSTER_FILES.payloadKeys,
    CODEC_SERVER_TOKEN_FILE: CLUSTER_FILES.codecToken,
    CODEC_SERVER_CORS_ORIGINS: CLUSTER_UI_URL,
    CODEC_SERVER_NAMESPACES: CLUSTER_NAMESPACE,
  };
}

// ---- --tuned -------------------------------------------------------------------------------------------

/** `key=value` (the dev server's --dynamic-config-value form, value in JSON) -> [key, value]. */
function parseDynamicConfigValue(entry: string): [string, unknown] {
  const at = entry.indexOf('=');
  const key = entry.slice(0, at);
  const raw = entry.slice(at + 1);
  try {
    return [key, JSON.parse(raw)];
  } catch {
    return [key, raw];
  }
}

/**
 * The dynamic config of `npm run cluster -- --tuned`: production.yaml's settings (passed in) plus
 * every value of DEV_SERVER_DYNAMIC_CONFIG, the one list the dev servers are started with.
 */
export function tunedDynamicConfig(production: Record<string, unknown> | null): string {
  const tuned: Record<string, unknown> = { ...(production ?? {}) };
  for (const entry of DEV_SERVER_DYNAMIC_CONFIG) {
    const [key, value] = parseDynamicConfigValue(entry);
    tuned[key] = [{ value }];
  }
  return (
    '# Written by `npm run cluster -- --tuned`: deploy/temporal/dynamicconfig/production.yaml plus\n' +
    "# DEV_SERVER_DYNAMIC_CONFIG (scripts/dev-server.ts), the dev server's tuning. Do not edit.\n" +
    stringify(tuned)
  );
}
