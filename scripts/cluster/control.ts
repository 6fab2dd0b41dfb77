// Starts, checks and stops the production-shaped Temporal of `npm run cluster`: PostgreSQL, the
// Temporal server (schema and namespace set up by deploy/temporal/setup.sh), the UI server. Starting
// is idempotent: what is healthy is left alone, only what is down is (re)started.
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import {
  CLUSTER_BINARIES,
  type ServerRelease,
  currentServerRelease,
  ensureReleaseBinaries,
  findTemporalCli,
  hasClusterBinaries,
  serverReleases,
} from '../tools';
import { ensureClusterCodecToken, ensureClusterPayloadKeys, isCodecServerHealthy } from './codec';
import {
  CLUSTER_ADDRESS,
  CLUSTER_CODEC_HTTPS_URL,
  CLUSTER_CODEC_URL,
  CLUSTER_DATA_DIR,
  CLUSTER_FILES,
  CLUSTER_NAMESPACE,
  CLUSTER_UI_URL,
  CONFIG_DIR,
  DEPLOY_ROOT,
  PRODUCTION_DYNAMIC_CONFIG,
  SERVER_ARGS,
  SETUP_SCRIPT,
  SSO_SERVER_ARGS,
  UI_CONFIG_ENV,
  CODEC_SERVER_ARGS,
  codecServerEnv,
  namespaceEnv,
  schemaEnv,
  serverEnv,
  tunedDynamicConfig,
  uiEnv,
} from './layout';
import { TLS_DIR, clientTlsEnv, ensureTlsMaterial, serverTlsEnv, uiTlsEnv } from './tls';
import {
  isInitialized,
  isPostgresReady,
  postgresBinDir,
  postgresPassword,
  psql,
  startPostgres,
  stopPostgres,
} from './postgres';
import { clusterRelease, recordRelease, upgradeSteps } from './upgrade';
import { ensureNodes, recordedNodes, runningNode, stopNodes } from './nodes';
import {
  answersOk,
  launchOf,
  logOffset,
  type ProcessState,
  runningProcess,
  startDetached,
  stopRecorded,
  tail,
  waitUntil,
} from './processes';
import { stopProcess } from '../stop-process';
import { historyShardsFor } from './shards';
import { ensureClusterSinks } from './sinks';
import {
  SERVICES,
  SSO_ISSUER,
  ensureSsoProvider,
  serviceEnv,
  serviceToken,
  ssoCodecEnv,
  ssoServerEnv,
  ssoUiEnv,
  stopSsoProvider,
} from './sso';

export interface ClusterOptions {
  /** Add the dev server's dynamic config (DEV_SERVER_DYNAMIC_CONFIG) to the production one. A running
   * server is restarted for it; without it a running server keeps the config it has. */
  tuned?: boolean;
  /**
   * Mutual TLS on the frontend (scripts/cluster/tls.ts). A running server in the other mode is
   * restarted (with the UI server) into the one asked: a plain run returns a --tls cluster to plain.
   */
  tls?: boolean;
  /**
   * Server nodes (scripts/cluster/nodes.ts): nodes 2..nodes that are down are started. Nodes above it
   * are left as they are (a plain run never stops node 2). Default 1.
   */
  nodes?: number;
  /**
   * Sign-on (scripts/cluster/sso.ts): the OpenID provider, the server's JWT authorizer, the UI's login. Like
   * `tls`, a running server in the other mode is restarted (with the UI server) into the one asked.
   */
  sso?: boolean;
  /** History shards of a cluster created by this call (scripts/cluster/shards.ts); refused for another count later. */
  historyShards?: number;
  /**
   * The server release to run (default DOCS_ADMIN_CLUSTER_RELEASE, else the checkout's, scripts/cluster/go.mod):
   * a new data folder is made at it, an older one is upgraded to it one minor version at a time
   * (scripts/cluster/upgrade.ts), a newer one is refused.
   */
  release?: string;
  /** Progress lines. */
  log?: (line: string) => void;
}

/** What the frontend requires of a caller: a client certificate (--tls), a provider's token (--sso). */
interface Mode {
  tls: boolean;
  sso: boolean;
}

const modeOf = (options: ClusterOptions): Mode => ({ tls: options.tls ?? false, sso: options.sso ?? false });

export interface ClusterStatus {
  postgres: boolean;
  server: boolean;
  ui: boolean;
  /** The namespace and search attributes were set up for the running server. */
  setup: boolean;
  codecServer: boolean;
}

/** One step of an upgrade: the schema to a release's, then that release's server serving on it. */
export interface UpgradeStep {
  from: string;
  to: string;
  /** The databases' schema versions before and after the step's update-schema. */
  schema: { temporal: [string, string]; visibility: [string, string] };
  /** The SQL tool's update of both databases (the previous server still serving, when it ran). */
  schemaMs: number;
  /** From stopping the previous server (when one ran) until the step's server served. */
  serverMs: number;
}

export interface EnsureResult {
  /** The server release running now (the data folder's). */
  release: string;
  /** The steps this call upgraded the data folder by (empty when it was at the release asked). */
  upgrade: UpgradeStep[];
  /** What this call started: empty when the cluster was already up. */
  started: ('postgresql' | 'temporal-server' | 'temporal-ui' | 'codec-server')[];
  /** The nodes after the first that this call started (or restarted). */
  startedNodes: number[];
  address: string;
  uiUrl: string;
  /** The frontend requires mutual TLS; clientEnv holds the TEMPORAL_TLS_* a client needs. */
  tls: boolean;
  clientEnv: Record<string, string>;
  /** PAYLOAD_ENCRYPTION_KEYS_FILE for the cluster's workers and clients (the codec server's keys). */
  payloadKeysFile: string;
  /** KEEPER_SINKS_FILE for the cluster's workers. */
  sinksFile: string;
  codecUrl: string;
  /** CODEC_SERVER_TOKEN_FILE of the codec server: `--codec-auth "Bearer <its line>"`. */
  codecTokenFile: string;
  /** With sign-on: the provider's issuer, the services' environments, and (first run only) the people's passwords. */
  sso?: {
    issuer: string;
    worker: Record<string, string>;
    cli: Record<string, string>;
    passwords?: Record<string, string>;
  };
}

/** Thrown when this machine cannot run the cluster at all (no binaries, no PostgreSQL, no CLI). */
export class ClusterUnavailableError extends Error {
  override readonly name = 'ClusterUnavailableError';
}

/** Why this machine cannot run the cluster, or undefined when it can. */
export function clusterUnavailableReason(): string | undefined {
  const missing: string[] = [];
  if (!hasClusterBinaries())
    missing.push('the Temporal server binaries (build them with `npm run bootstrap`, which needs Go)');
  if (!findTemporalCli()) missing.push('the Temporal CLI (`npm run bootstrap`)');
  if (!postgresBinDir()) missing.push('PostgreSQL (apt-get install -y postgresql)');
  return missing.length ? `cannot run the cluster: missing ${missing.join('; ')}` : undefined;
}

function temporalCli(): string {
  const cli = findTemporalCli();
  if (!cli) throw new ClusterUnavailableError('no Temporal CLI: run `npm run bootstrap`');
  return cli;
}

/** The health check through the temporal CLI, with the client certificate when the frontend requires one. */
function isServerHealthy(cli: string, tls = runsTls()): boolean {
  const result = spawnSync(cli, ['operator', 'cluster', 'health', '--address', CLUSTER_ADDRESS], {
    encoding: 'utf8',
    timeout: 10_000,
    env: { ...process.env, ...(tls ? clientTlsEnv() : {}) },
  });
  return result.status === 0 && result.stdout.includes('SERVING');
}

export function isUiHealthy(): Promise<boolean> {
  return answersOk(CLUSTER_UI_URL);
}

export async function clusterStatus(): Promise<ClusterStatus> {
  const cli = findTemporalCli();
  const server = cli ? isServerHealthy(cli) : false;
  return {
    postgres: isPostgresReady(),
    server,
    ui: await isUiHealthy(),
    setup: server && existsSync(CLUSTER_FILES.setupDone),
    codecServer: await isCodecServerHealthy(),
  };
}

/** Runs setup.sh with a phase, its output appended to setup.log; fails with the log's tail. */
function runSetup(phase: 'schema' | 'namespace', env: NodeJS.ProcessEnv): Promise<void> {
  const offset = logOffset(CLUSTER_FILES.setupLog);
  const out = openSync(CLUSTER_FILES.setupLog, 'a');
  return new Promise((resolve, reject) => {
    const child = spawn('sh', [SETUP_SCRIPT, phase], { env, stdio: ['ignore', out, out] });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code === 0) resolve();
      else
        reject(
          new Error(
            `setup.sh ${phase} failed (exit ${code}); ${CLUSTER_FILES.setupLog}:\n${tail(CLUSTER_FILES.setupLog, { offset })}`,
          ),
        );
    });
  });
}

/** The dynamic config file the server should read: production.yaml, or with --tuned a file written from it. */
function dynamicConfigFile(tuned: boolean): string {
  if (!tuned) return PRODUCTION_DYNAMIC_CONFIG;
  const production = parse(readFileSync(PRODUCTION_DYNAMIC_CONFIG, 'utf8')) as Record<string, unknown> | null;
  writeFileSync(CLUSTER_FILES.tunedDynamicConfig, tunedDynamicConfig(production));
  return CLUSTER_FILES.tunedDynamicConfig;
}

/**
 * Whether the running server has the frontend's TLS (its environment says so). Read from /proc, not from
 * the record: a checkout without --tls support that finds the frontend unhealthy (it has no certificate)
 * may overwrite the record with a start that fails, and the TLS server must still be found.
 */
export function runsTls(): boolean {
  return serverEnvironmentHas('TEMPORAL_TLS_FRONTEND_CERT');
}

/** Whether the running server authorizes by the provider's tokens (--sso; its environment says so). */
export function runsSso(): boolean {
  return serverEnvironmentHas('TEMPORAL_JWT_KEY_SOURCE1');
}

function serverEnvironmentHas(name: string): boolean {
  const pid = runningServer()?.state.pid ?? processesOf(CLUSTER_BINARIES.server.path)[0];
  if (pid === undefined) return false;
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').includes(`\0${name}=`);
  } catch {
    return false;
  }
}

/** PIDs of the processes running `binary` (by /proc/<pid>/exe). */
function processesOf(binary: string): number[] {
  if (!existsSync(binary) || !existsSync('/proc/self/exe')) return [];
  const real = realpathSync(binary);
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return readlinkSync(`/proc/${entry}/exe`) === real;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** The schema versions of both databases (the SQL tool's schema_version table). */
function schemaVersions(): { temporal: string; visibility: string } {
  const version = (database: string) => {
    try {
      return psql(database, 'SELECT curr_version FROM schema_version')[0]?.[0] ?? 'none';
    } catch {
      return 'none';
    }
  };
  return { temporal: version('temporal'), visibility: version('temporal_visibility') };
}

/** setup.sh schema with a release's SQL tool: creates the databases, or updates them to its schema. */
function updateSchema(release: ServerRelease): Promise<void> {
  return runSetup('schema', schemaEnv(postgresPassword(), release.sqlTool));
}

/** How node 1's server starts, whatever its release. */
interface ServerSettings {
  cli: string;
  dynamicConfig: string;
  mode: Mode;
  historyShards: number;
  log: (line: string) => void;
}

/** Starts node 1 with a release's server on the schema as it is, and waits until it serves. */
async function launchServer(release: ServerRelease, settings: ServerSettings) {
  const { cli, dynamicConfig, historyShards, log } = settings;
  const { tls, sso } = settings.mode;
  log(
    `Temporal server ${release.version}: starting at ${CLUSTER_ADDRESS} (dynamic config ${path.basename(dynamicConfig)}${tls ? ', mutual TLS' : ''}${sso ? ', sign-on' : ''})`,
  );
  rmSync(CLUSTER_FILES.setupDone, { force: true });
  const args = ['--root', DEPLOY_ROOT, ...(sso ? SSO_SERVER_ARGS : SERVER_ARGS)];
  const server = startDetached(release.server, args, {
    env: {
      ...serverEnv(postgresPassword(), dynamicConfig, historyShards),
      ...(tls ? serverTlsEnv() : {}),
      ...(sso ? ssoServerEnv() : {}),
    },
    log: CLUSTER_FILES.serverLog,
    stateFile: CLUSTER_FILES.serverState,
    extra: { dynamicConfig, tls, release: release.version },
  });
  await waitUntil(
    `the Temporal server ${release.version}`,
    () => isServerHealthy(cli, tls),
    server,
    CLUSTER_FILES.serverLog,
    120_000,
  );
}

/**
 * A new data folder's databases made at `release`'s schema (or a folder's at that release checked), then
 * its server started. The release is recorded at once: a new database holds no data a server must move.
 */
async function startServer(release: ServerRelease, settings: ServerSettings) {
  settings.log(`Temporal schema: creating or updating the databases to server ${release.version}'s (setup.sh schema)`);
  await updateSchema(release);
  recordRelease(release.version);
  await launchServer(release, settings);
}

/**
 * Brings the data folder from release `from` to the last of `steps`, one step at a time: the step's SQL
 * tool updates both databases while the previous server (if it runs) still serves, then the previous
 * server stops and the step's starts and serves. The last step's server stays up. Each step is logged.
 */
async function upgradeDataFolder(
  from: string,
  steps: ServerRelease[],
  serving: boolean,
  settings: ServerSettings,
): Promise<UpgradeStep[]> {
  const { log } = settings;
  const route = [from, ...steps.map((s) => s.version)].join(' -> ');
  log(`Temporal upgrade: the data folder is at server ${from}; one minor version at a time: ${route}`);
  // The other nodes leave for the upgrade; they come back on the new release after it (ensureNodes).
  for (const line of await stopNodes()) log(`Temporal upgrade: stopped ${line}`);
  const done: UpgradeStep[] = [];
  let previous = from;
  let running = serving;
  for (const [i, release] of steps.entries()) {
    const step = `Temporal upgrade ${i + 1}/${steps.length} (${previous} -> ${release.version})`;
    const before = schemaVersions();
    log(`${step}: schema first: temporal-sql-tool ${release.version} update-schema on both databases`);
    const schemaStarted = Date.now();
    await updateSchema(release);
    const schemaMs = Date.now() - schemaStarted;
    const after = schemaVersions();
    log(
      `${step}: schema temporal ${before.temporal} -> ${after.temporal}, visibility ${before.visibility} -> ${after.visibility} in ${(schemaMs / 1000).toFixed(1)}s`,
    );
    const serverStarted = Date.now();
    if (running) {
      log(`${step}: stopping server ${previous}`);
      await stopServerNode();
    }
    await launchServer(release, { ...settings, log: (line) => log(`${step}: ${line}`) });
    // At this release once its server has served on the data (a server may move data as it starts).
    recordRelease(release.version);
    running = true;
    const serverMs = Date.now() - serverStarted;
    log(`${step}: server ${release.version} serves after ${(serverMs / 1000).toFixed(1)}s; the data folder is at it`);
    done.push({
      from: previous,
      to: release.version,
      schema: { temporal: [before.temporal, after.temporal], visibility: [before.visibility, after.visibility] },
      schemaMs,
      serverMs,
    });
    previous = release.version;
  }
  return done;
}

/** Stops node 1's server (recorded here, or by the checkout that started it) and forgets the namespace setup. */
async function stopServerNode(): Promise<void> {
  const server = runningServer();
  if (server) await stopRecorded(server.stateFile);
  rmSync(CLUSTER_FILES.setupDone, { force: true });
}

/** The release asked: options.release, else DOCS_ADMIN_CLUSTER_RELEASE, else the checkout's own. */
function releaseAsked(options: ClusterOptions): ServerRelease {
  const asked = options.release ?? process.env.DOCS_ADMIN_CLUSTER_RELEASE;
  if (!asked) return currentServerRelease();
  const releases = serverReleases();
  const release = releases.find((r) => r.version === asked);
  if (!release)
    throw new Error(
      `DOCS_ADMIN_CLUSTER_RELEASE=${asked}: the cluster runs one of ${releases.map((r) => r.version).join(', ')}`,
    );
  return release;
}

async function setupNamespace(cli: string, { tls, sso }: Mode, log: (line: string) => void): Promise<void> {
  log('Temporal setup: namespace and search attributes (setup.sh namespace)');
  // With sign-on the temporal CLI calls as the setup service; it would turn TLS on for a token by itself.
  const token = sso ? { TEMPORAL_API_KEY: await serviceToken(SERVICES.setup), TEMPORAL_TLS: String(tls) } : {};
  await runSetup('namespace', { ...namespaceEnv(cli), ...(tls ? clientTlsEnv() : {}), ...token });
  writeFileSync(CLUSTER_FILES.setupDone, `${new Date().toISOString()}\n`);
}

async function startUi({ tls, sso }: Mode, log: (line: string) => void): Promise<void> {
  log(`Temporal UI: starting at ${CLUSTER_UI_URL}${sso ? ` (sign-on with ${SSO_ISSUER})` : ''}`);
  const ui = startDetached(
    CLUSTER_BINARIES.ui.path,
    ['--root', DEPLOY_ROOT, '--config', CONFIG_DIR, '--env', UI_CONFIG_ENV, 'start'],
    {
      env: { ...uiEnv(), ...(tls ? uiTlsEnv() : {}), ...(sso ? ssoUiEnv() : {}) },
      log: CLUSTER_FILES.uiLog,
      stateFile: CLUSTER_FILES.uiState,
      extra: { codecEndpoint: CLUSTER_CODEC_URL, sso },
    },
  );
  await waitUntil('the Temporal UI', isUiHealthy, ui, CLUSTER_FILES.uiLog, 60_000);
}

async function startCodecServer(sso: boolean, log: (line: string) => void): Promise<void> {
  log(
    `codec server: starting at ${sso ? CLUSTER_CODEC_HTTPS_URL : CLUSTER_CODEC_URL} (keys ${CLUSTER_FILES.payloadKeys})`,
  );
  const codec = startDetached(process.execPath, CODEC_SERVER_ARGS, {
    env: { ...codecServerEnv(), ...(sso ? ssoCodecEnv() : {}) },
    log: CLUSTER_FILES.codecServerLog,
    stateFile: CLUSTER_FILES.codecServerState,
    extra: { tokenFile: CLUSTER_FILES.codecToken, sso, namespaces: CLUSTER_NAMESPACE },
  });
  await waitUntil('the codec server', isCodecServerHealthy, codec, CLUSTER_FILES.codecServerLog, 60_000);
}

/**
 * A switch of TLS mode or to the tuning restarts node 1 (a TLS switch also the UI server and every other
 * node); `status` is updated to what is down after it. Returns the dynamic config node 1 runs with.
 */
async function applySwitches(
  status: ClusterStatus,
  options: ClusterOptions,
  log: (line: string) => void,
): Promise<string> {
  const { tls, sso } = modeOf(options);
  const ours = runningProcess(CLUSTER_FILES.serverState);
  const runsTuned = ours?.dynamicConfig === CLUSTER_FILES.tunedDynamicConfig;
  // A switch of TLS mode keeps the tuning the server runs with.
  const dynamicConfig = dynamicConfigFile((options.tuned ?? false) || (runsTuned && status.server));
  if (status.server && (runsTls() !== tls || runsSso() !== sso)) {
    const mode = [tls ? 'mutual TLS (--tls)' : '', sso ? 'sign-on (--sso)' : ''].filter(Boolean).join(' and ');
    log(`Temporal server and UI: restarting ${mode ? `with ${mode}` : 'without TLS or sign-on (the default)'}`);
    await stopSwitching();
    Object.assign(status, { server: false, setup: false, ui: false });
  } else if (status.server && ours && options.tuned && !runsTuned) {
    log('Temporal server: restarting with the dev tuning (--tuned)');
    await stopRecorded(CLUSTER_FILES.serverState);
    Object.assign(status, { server: false, setup: false });
  } else if (status.server && runsTuned && !options.tuned) {
    // Left as it is, so a plain run (or a test) never restarts a tuned server under a benchmark.
    log(
      'Temporal server: running with the dev tuning (--tuned); `npm run cluster -- --stop` first for the production defaults',
    );
  }
  return dynamicConfig;
}

/** Why a running codec server must restart to serve as this release does, if it must. */
function codecRestartReason(codec: ProcessState, sso: boolean): string | undefined {
  if ((codec.sso === true) !== sso) return sso ? 'accept sign-on tokens' : 'drop sign-on';
  if (codec.tokenFile !== CLUSTER_FILES.codecToken) return 'require a bearer token';
  // Before CODEC_SERVER_NAMESPACES a codec server decoded for a role in any namespace.
  if (codec.namespaces !== CLUSTER_NAMESPACE) return `serve only namespace ${CLUSTER_NAMESPACE}`;
  return undefined;
}

/** The codec server and the UI server up; what of them counts as started by this call. */
async function ensureUiAndCodec(status: ClusterStatus, mode: Mode, log: (line: string) => void) {
  const { sso } = mode;
  const started: EnsureResult['started'] = [];
  // A cluster from before the codec server gets one, and its UI is restarted once to decode with it;
  // neither counts as started here: whoever stops what this call started leaves them (the cluster was up).
  // A codec server of an earlier release is restarted as this one runs it, and not counted as started either.
  const upgrade = status.server;
  const codec = runningProcess(CLUSTER_FILES.codecServerState);
  const restartCodec = codec && codecRestartReason(codec, sso);
  if (status.codecServer && restartCodec) {
    log(`codec server: restarting to ${restartCodec}`);
    await stopRecorded(CLUSTER_FILES.codecServerState);
    status.codecServer = false;
  }
  if (!status.codecServer) {
    await startCodecServer(sso, log);
    if (!upgrade) started.push('codec-server');
  }
  const ui = runningProcess(CLUSTER_FILES.uiState);
  const restartUi =
    status.ui && ui !== undefined && (ui.codecEndpoint !== CLUSTER_CODEC_URL || (ui.sso === true) !== sso);
  if (restartUi) {
    log('Temporal UI: restarting to decode payloads with the codec server');
    await stopRecorded(CLUSTER_FILES.uiState);
  }
  if (!status.ui || restartUi) {
    await startUi(mode, log);
    if (!restartUi) started.push('temporal-ui');
  }
  return started;
}

/** The release asked and the data folder's way to it. */
interface ReleasePlan {
  target: ServerRelease;
  /** The data folder's release; undefined for a new one. */
  from?: string;
  /** The releases to upgrade through, the target last; empty when the folder is new or at the target. */
  steps: ServerRelease[];
}

/**
 * The upgrade path of the data folder to the release asked, with every binary it needs built. Refuses a
 * downgrade or a path that skips a minor version before anything is stopped.
 */
async function planRelease(options: ClusterOptions): Promise<ReleasePlan> {
  const target = releaseAsked(options);
  const releases = serverReleases();
  const from = clusterRelease();
  const versions = releases.map((r) => r.version);
  const steps = (from === undefined ? [] : upgradeSteps(from, target.version, versions)).map((version) =>
    releases.find((r) => r.version === version)!,
  );
  for (const release of [target, ...steps]) await ensureReleaseBinaries(release);
  return { target, ...(from === undefined ? {} : { from }), steps };
}

/**
 * Node 1 serving at the plan's release: the data folder upgraded step by step (a running server of the
 * old release is replaced in place), or the server started when it is down. Updates `status` and
 * `started`; returns the upgrade's steps.
 */
async function ensureServer(
  plan: ReleasePlan,
  status: ClusterStatus,
  started: EnsureResult['started'],
  settings: ServerSettings,
): Promise<UpgradeStep[]> {
  if (plan.from !== undefined && plan.steps.length > 0) {
    const upgrade = await upgradeDataFolder(plan.from, plan.steps, status.server, settings);
    // A server that was down counts as started by this call; one that was up was upgraded in place.
    if (!status.server) started.push('temporal-server');
    status.setup = false;
    return upgrade;
  }
  if (!status.server) {
    await startServer(plan.target, settings);
    started.push('temporal-server');
  }
  return [];
}

/**
 * Brings the cluster up and returns once every part is healthy. A healthy cluster is left as it is
 * (nothing started, in well under a second), except that `tuned` restarts a server that runs with
 * the production dynamic config. Whatever is down starts with production defaults unless `tuned`.
 * Nodes 2..`nodes` that are down start with node 1's configuration; nodes a TLS switch stopped start again.
 */
export async function ensureCluster(options: ClusterOptions = {}): Promise<EnsureResult> {
  const log = options.log ?? (() => undefined);
  const unavailable = clusterUnavailableReason();
  if (unavailable) throw new ClusterUnavailableError(unavailable);
  const cli = temporalCli();
  mkdirSync(CLUSTER_DATA_DIR, { recursive: true });
  const mode = modeOf(options);
  const { tls, sso } = mode;
  // Sign-on needs the certificates too: the codec server serves HTTPS with the frontend's.
  if ((tls || sso) && ensureTlsMaterial()) log(`TLS: made a CA, the server's and a client's certificate in ${TLS_DIR}`);
  const started: EnsureResult['started'] = [];
  const historyShards = historyShardsFor(options.historyShards, isInitialized());

  const plan = await planRelease(options);
  const status = await clusterStatus();
  const nodesUp = Math.max(1, ...recordedNodes().filter((n) => runningNode(n)));
  const dynamicConfig = await applySwitches(status, options, log);
  if (!status.postgres) {
    startPostgres(log);
    started.push('postgresql');
  }
  // The provider before the server: the server reads its JWKS, the UI server its discovery document at start.
  const signOn = sso ? await ensureSsoProvider(log) : undefined;
  if (!sso && (await stopSsoProvider())) log('OpenID provider: stopped (the cluster runs without sign-on)');
  const upgrade = await ensureServer(plan, status, started, { cli, dynamicConfig, mode, historyShards, log });
  if (!status.server || !status.setup) await setupNamespace(cli, mode, log);
  const payloadKeysFile = ensureClusterPayloadKeys(log);
  const sinksFile = ensureClusterSinks(log);
  const codecTokenFile = ensureClusterCodecToken(log);
  started.push(...(await ensureUiAndCodec(status, mode, log)));
  const first = runningServer()?.state.pid;
  const nodes = Math.max(options.nodes ?? 1, nodesUp);
  const startedNodes = first !== undefined && nodes > 1 ? await ensureNodes(nodes, first, cli, log) : [];
  return {
    release: clusterRelease() ?? plan.target.version,
    upgrade,
    started,
    startedNodes,
    address: CLUSTER_ADDRESS,
    uiUrl: CLUSTER_UI_URL,
    tls,
    clientEnv: tls ? clientTlsEnv() : {},
    payloadKeysFile,
    sinksFile,
    codecUrl: sso ? CLUSTER_CODEC_HTTPS_URL : CLUSTER_CODEC_URL,
    codecTokenFile,
    ...(signOn
      ? {
          sso: {
            issuer: SSO_ISSUER,
            worker: serviceEnv(SERVICES.worker),
            cli: serviceEnv(SERVICES.cli),
            ...(signOn.passwords ? { passwords: signOn.passwords } : {}),
          },
        }
      : {}),
  };
}

/** Stops the cluster's server and UI server (recorded or not: see runsTls), for a switch of TLS mode. */
async function stopSwitching(): Promise<void> {
  await stopRecorded(CLUSTER_FILES.uiState);
  const server = runningServer();
  if (server) await stopRecorded(server.stateFile);
  for (const pid of [CLUSTER_BINARIES.ui.path, CLUSTER_BINARIES.server.path].flatMap(processesOf))
    await stopProcess(pid);
  rmSync(CLUSTER_FILES.setupDone, { force: true });
}

export type ClusterComponent = EnsureResult['started'][number];

/**
 * Stops the UI server, the Temporal server and PostgreSQL that this checkout started (or only the
 * given ones), waiting for each to exit. Returns what was running.
 */
export async function stopCluster(
  log: (line: string) => void = () => undefined,
  only?: readonly ClusterComponent[],
): Promise<string[]> {
  const wanted = (component: ClusterComponent) => !only || only.includes(component);
  const stopped: string[] = [];
  if (wanted('temporal-ui')) {
    const ui = await stopRecorded(CLUSTER_FILES.uiState);
    if (ui) stopped.push(`temporal-ui (pid ${ui.pid})`);
  }
  if (wanted('codec-server')) {
    const codec = await stopRecorded(CLUSTER_FILES.codecServerState);
    if (codec) stopped.push(`codec-server (pid ${codec.pid})`);
  }
  if (wanted('temporal-server')) {
    stopped.push(...(await stopNodes()));
    const server = await stopRecorded(CLUSTER_FILES.serverState);
    if (server) stopped.push(`temporal-server (pid ${server.pid})`);
    rmSync(CLUSTER_FILES.setupDone, { force: true });
  }
  if (wanted('temporal-server') && (await stopSsoProvider())) stopped.push('sso-provider');
  if (wanted('postgresql') && stopPostgres()) stopped.push('postgresql');
  for (const name of stopped) log(`stopped ${name}`);
  return stopped;
}

// ---- restarting the server (the chaos suite) ---------------------------------------------------------

/** The running cluster's temporal-server and the state file that records it. */
interface RunningServer {
  state: ProcessState;
  stateFile: string;
}

/**
 * The cluster's running temporal-server: the one this checkout recorded, else the process running the
 * same binary (found in /proc), recorded by the checkout named in its --root (another worktree of the
 * repository on this machine started the cluster the tests share).
 */
function runningServer(): RunningServer | undefined {
  const ours = runningProcess(CLUSTER_FILES.serverState);
  if (ours) return { state: ours, stateFile: CLUSTER_FILES.serverState };
  if (!existsSync(CLUSTER_BINARIES.server.path)) return undefined;
  const binary = realpathSync(CLUSTER_BINARIES.server.path);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let exe: string;
    try {
      exe = readlinkSync(`/proc/${entry}/exe`);
    } catch {
      continue;
    }
    if (exe !== binary) continue;
    const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    const root = args[args.indexOf('--root') + 1];
    if (!root) continue;
    const stateFile = path.join(root, path.relative(DEPLOY_ROOT, CLUSTER_FILES.serverState));
    const state = runningProcess(stateFile);
    if (state?.pid === Number(entry)) return { state, stateFile };
  }
  return undefined;
}

export interface ServerRestart {
  pidBefore: number;
  pidAfter: number;
  /** From the stop signal until the frontend answered again. */
  outageMs: number;
  /** The dynamic config file the server runs with, before and after (the same). */
  dynamicConfig: unknown;
}

/**
 * Stops the cluster's temporal-server (SIGTERM: a rolling restart; SIGKILL: a crash) and starts it
 * again at once with the same command line, environment (so the same dynamic config) and log, and its
 * state file updated; returns once the frontend answers. PostgreSQL and the UI server stay up.
 */
export async function restartServer(signal: NodeJS.Signals = 'SIGTERM'): Promise<ServerRestart> {
  const cli = temporalCli();
  const running = runningServer();
  if (!running)
    throw new Error('no temporal-server of the cluster is running: nothing to restart (`npm run cluster` starts it)');
  const { state, stateFile } = running;
  const launch = launchOf(state.pid);
  const stoppedAt = Date.now();
  await stopProcess(state.pid, { signal });
  const { pid: _pid, command: _command, ...extra } = state;
  const started = startDetached(launch.command, launch.args, { env: launch.env, log: launch.log, stateFile, extra });
  await waitUntil('the restarted Temporal server', () => isServerHealthy(cli), started, launch.log, 120_000);
  return {
    pidBefore: state.pid,
    pidAfter: started.pid,
    outageMs: Date.now() - stoppedAt,
    dynamicConfig: state.dynamicConfig,
  };
}

/** The running server's record (pid, dynamic config), wherever the cluster was started from. */
export function serverRecord(): ProcessState | undefined {
  return runningServer()?.state;
}
