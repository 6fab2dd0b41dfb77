// Test harness: a real Temporal server per test file (dev server, time-skipping, or the
// production-shaped cluster), a unique task queue per test, workflows bundled once per process, and
// workers that always shut down.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  bundleWorkflowCode,
  DefaultLogger,
  type NativeConnection,
  Runtime,
  Worker,
  type WorkerOptions,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { type EmulatorHandle, type EmulatorOptions, startEmulator } from '../../emulator';
import { FAILURE_CONVERTER_PATH } from '../../src/codec';
import { loadWorkerConfig } from '../../src/config';
import { freeLoopbackPort } from '../../src/observability/free-port';
import { noopMetrics } from '../../src/observability/metrics';
import { SearchAttr } from '../../src/shared/search-attributes';
import type { AgentJobOptions } from '../../src/shared/agent-job';
import {
  type DocsAdminWorker,
  WORKFLOW_INTERCEPTOR_MODULES,
  createDocsAdminWorker,
  workflowTracingSinks,
} from '../../src/worker';
import { activeTracing } from '../../src/observability/tracing';
import { DEV_SERVER_DYNAMIC_CONFIG } from '../../scripts/dev-server';
import { devServerExecutable, testServerExecutable } from '../../scripts/tools';
import { type EnsureResult, ensureCluster, stopCluster } from '../../scripts/cluster/control';
import { CLUSTER_ADDRESS, CLUSTER_NAMESPACE } from '../../scripts/cluster/layout';
import { assertClusterLane } from '../../scripts/test-lanes';
import { cachedBundle } from './bundle-cache';

/** The one wait-until helper (scripts/wait.ts), re-exported for the tests that import the harness. */
export { waitFor } from '../../scripts/wait';

/** As the worker resolves it (src/worker/worker.ts): the same bundle as `npm run worker` makes, shared with it. */
const WORKFLOWS_PATH = require.resolve('../../src/workflows');

let runtimeInstalled = false;
/** Keeps the SDK quiet in test output unless TEST_LOG_LEVEL asks for more. */
export function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const level = (process.env.TEST_LOG_LEVEL ?? 'ERROR') as 'ERROR';
  Runtime.install({
    logger: new DefaultLogger(level),
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
  });
}

export interface DevEnvOptions {
  /** Also serve the Web UI (on a free 127.0.0.1 port); its address is then in `env.uiUrl`. */
  ui?: boolean;
  /** Extra `--dynamic-config-value` settings of the server started here (ignored for TEMPORAL_ADDRESS). */
  dynamicConfig?: string[];
}

/** A dev-server environment; `uiUrl` is set when it was created with `{ ui: true }`. */
export type DevEnv = TestWorkflowEnvironment & { uiUrl?: string };

/**
 * A real Temporal dev server: the one at TEMPORAL_ADDRESS when set (reused, left running), else the
 * built CLI's `start-dev` on a free 127.0.0.1 port with the project's search attributes, torn down by
 * env.teardown(). With `{ ui: true }` the Web UI runs too: on a free port for the server started
 * here; for TEMPORAL_ADDRESS, at TEMPORAL_UI_URL or else the dev server's default (gRPC port + 1000).
 */
export async function createDevEnv(options: DevEnvOptions = {}): Promise<DevEnv> {
  quietRuntime();
  const address = process.env.TEMPORAL_ADDRESS;
  if (address) {
    const env: DevEnv = await TestWorkflowEnvironment.createFromExistingServer({
      address,
      namespace: process.env.TEMPORAL_NAMESPACE || 'default',
    });
    if (options.ui) {
      const [host = '127.0.0.1', port = '7233'] = address.split(':');
      env.uiUrl = process.env.TEMPORAL_UI_URL || `http://${host}:${Number(port) + 1000}`;
    }
    return env;
  }
  const uiPort = options.ui ? await freeLoopbackPort() : undefined;
  const env: DevEnv = await startLocalDevServer(options.dynamicConfig, uiPort);
  if (uiPort) env.uiUrl = `http://127.0.0.1:${uiPort}`;
  return env;
}

/**
 * A dev server of its own, whatever TEMPORAL_ADDRESS says: the built CLI's `start-dev` on a free
 * 127.0.0.1 port with the project's search attributes and dynamic config plus `dynamicConfig`, torn
 * down by env.teardown(). The Web UI too when a uiPort is given.
 */
export function startLocalDevServer(
  dynamicConfig: readonly string[] = [],
  uiPort?: number,
): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: devServerExecutable(),
      ip: '127.0.0.1',
      searchAttributes: Object.values(SearchAttr),
      extraArgs: [
        '--log-level',
        'error',
        ...[...DEV_SERVER_DYNAMIC_CONFIG, ...dynamicConfig].flatMap((value) => ['--dynamic-config-value', value]),
      ],
      ...(uiPort ? { ui: true, uiPort } : {}),
    },
  });
}

/** Starts of the test server before a run gives up: each one that misses is killed by the SDK. */
const TEST_SERVER_STARTS = 3;

/**
 * The SDK waits a fixed 5 s for the test server to answer (sdk-core's ephemeral_server), and a JVM on a
 * loaded machine can take longer; a start that missed is tried again, as a person would.
 */
async function startTimeSkippingServer(): Promise<TestWorkflowEnvironment> {
  for (let start = 1; ; start++) {
    try {
      return await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: testServerExecutable() } });
    } catch (err) {
      if (start >= TEST_SERVER_STARTS || !/did not start within/.test(String(err))) throw err;
    }
  }
}

/** Temporal's time-skipping test server (Java), for workflows that sleep for hours or days. */
export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  quietRuntime();
  const env = await startTimeSkippingServer();
  // The dev server gets the search attributes on its command line; this one must be told, or every
  // upsert fails the workflow task.
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(
      Object.values(SearchAttr).map((key) => [
        key.name,
        temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
      ]),
    ),
  });
  return env;
}

/**
 * Why tests on the production-shaped cluster are skipped: only when DOCS_ADMIN_SKIP_CLUSTER=1 (a machine
 * without PostgreSQL or Go). Otherwise they run, and fail with the reason when the cluster cannot
 * (CI installs PostgreSQL and builds the binaries).
 */
export function clusterSkipReason(): string | undefined {
  return process.env.DOCS_ADMIN_SKIP_CLUSTER === '1'
    ? 'DOCS_ADMIN_SKIP_CLUSTER=1: no production-shaped cluster on this machine'
    : undefined;
}

/** A cluster environment; `ensured` tells what createClusterEnv found running and what it started. */
export type ClusterEnv = TestWorkflowEnvironment & { ensured: EnsureResult };

/**
 * The production-shaped cluster of `npm run cluster` at 127.0.0.1:7633, brought up by the same code
 * (ensureCluster) when it is not running: reused when it is, never restarted. env.teardown() closes the
 * connections and stops what this call started (DOCS_ADMIN_KEEP_CLUSTER=1 leaves it running), so a
 * cluster someone started by hand stays up.
 */
export async function createClusterEnv(): Promise<ClusterEnv> {
  assertClusterLane();
  quietRuntime();
  const ensured = await ensureCluster();
  const env = (await TestWorkflowEnvironment.createFromExistingServer({
    address: CLUSTER_ADDRESS,
    namespace: CLUSTER_NAMESPACE,
  })) as ClusterEnv;
  env.ensured = ensured;
  const closeConnections = env.teardown.bind(env);
  env.teardown = async () => {
    await closeConnections();
    if (ensured.started.length > 0 && process.env.DOCS_ADMIN_KEEP_CLUSTER !== '1')
      await stopCluster(() => undefined, ensured.started);
  };
  return env;
}

/**
 * Where the end-to-end files run: the production-shaped cluster with its default settings (the shape
 * production has), or a dev server when E2E_SERVER=dev-server or DOCS_ADMIN_SKIP_CLUSTER=1 (a machine
 * without PostgreSQL or Go).
 */
export async function createE2eEnv(): Promise<TestWorkflowEnvironment> {
  const asked = process.env.E2E_SERVER;
  if (asked && asked !== 'cluster' && asked !== 'dev-server')
    throw new Error(`E2E_SERVER=${asked}: expected cluster or dev-server`);
  const onCluster = asked ? asked === 'cluster' : clusterSkipReason() === undefined;
  return onCluster ? createClusterEnv() : createDevEnv();
}

/** Ends a test's long-lived workflows (keepers): a workflow already closed or never started is fine. */
export async function terminateAll(client: Client, workflowIds: Iterable<string | undefined>): Promise<void> {
  for (const id of workflowIds)
    if (id)
      await client.workflow
        .getHandle(id)
        .terminate('test finished')
        .catch(() => undefined);
}

/**
 * An agent job's options that poll the emulator's short jobs every few hundred ms, for tests that time
 * something else (the default polling waits 3 s before its first poll).
 */
export const FAST_AGENT_POLLS: AgentJobOptions = { poll: { floorMs: 100, fraction: 0.5, capMs: 400 } };

export function uniqueTaskQueue(prefix = 'test'): string {
  return `${prefix}-${randomUUID()}`;
}

const bundles = new Map<string, Promise<WorkflowBundleWithSourceMap>>();
/**
 * src/workflows (or another workflows module) bundled once per process, and once per test run through
 * the run's bundle cache (./bundle-cache.ts): bundling takes seconds of CPU.
 * `encrypted`: with the failure converter of an encrypting worker (src/codec/failure-converter.ts).
 */
export function workflowBundle(
  workflowsPath = WORKFLOWS_PATH,
  { encrypted = false }: { encrypted?: boolean } = {},
): Promise<WorkflowBundleWithSourceMap> {
  const key = `${workflowsPath}${encrypted ? ' encrypted' : ''}`;
  let bundle = bundles.get(key);
  if (!bundle) {
    bundle = cachedBundle(
      {
        workflowsPath,
        // As the worker bundles it (src/worker/tracing.ts): the replay corpus replays what production runs.
        workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
        failureConverterPath: encrypted ? FAILURE_CONVERTER_PATH : undefined,
        logger: new DefaultLogger('WARN'),
      },
      bundleWorkflowCode,
    );
    bundles.set(key, bundle);
  }
  return bundle;
}

export interface RunWorkerOptions extends Partial<Omit<WorkerOptions, 'connection' | 'taskQueue'>> {
  taskQueue: string;
  /** Defaults to src/workflows. */
  workflowsPath?: string;
}

async function createWorker(env: TestWorkflowEnvironment, options: RunWorkerOptions): Promise<Worker> {
  const { workflowsPath, ...workerOptions } = options;
  return Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    workflowBundle: await workflowBundle(workflowsPath),
    sinks: workflowTracingSinks(activeTracing()),
    ...workerOptions,
  });
}

/** Runs a worker on env for the duration of fn, then shuts it down, whatever fn does. */
export async function runWorker<T>(
  env: TestWorkflowEnvironment,
  options: RunWorkerOptions,
  fn: (worker: Worker) => Promise<T>,
): Promise<T> {
  const worker = await createWorker(env, options);
  return worker.runUntil(() => fn(worker));
}

export interface StartedWorker {
  worker: Worker;
  /** Shuts the worker down (if still running) and waits until it has stopped. */
  stop(): Promise<void>;
}

/** A worker that stays up across a file's tests (start it in before(), stop it in after()). */
export async function startWorker(env: TestWorkflowEnvironment, options: RunWorkerOptions): Promise<StartedWorker> {
  const worker = await createWorker(env, options);
  const running = worker.run();
  return {
    worker,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
    },
  };
}

/**
 * The product's worker (createDocsAdminWorker, as `npm run worker` builds it) in this process, on env's
 * connection (or `connection`: a process holds one worker per task queue and connection), configured
 * from `vars` like the environment of `npm run worker`; already running. close() shuts it down and waits.
 */
export async function startDocsAdminWorker(
  env: TestWorkflowEnvironment,
  vars: Record<string, string>,
  {
    serveLimiter = true,
    limiterTaskQueue,
    connection = env.nativeConnection,
  }: { serveLimiter?: boolean; limiterTaskQueue?: string; connection?: NativeConnection } = {},
): Promise<DocsAdminWorker> {
  const config = loadWorkerConfig({
    TEMPORAL_ADDRESS: env.address,
    AGENT_RATE_LIMIT: '100/10s',
    METRICS_PORT: '0',
    ...vars,
  });
  const worker = await createDocsAdminWorker(config, {
    connection,
    client: env.client,
    workflowBundle: await workflowBundle(undefined, { encrypted: Boolean(config.payloadKeysFile) }),
    metrics: noopMetrics,
    metricsListen: false,
    serveLimiter,
    limiterTaskQueue,
  });
  void worker.run().catch(() => undefined);
  return worker;
}

/** What an end-to-end test runs against: the admin API emulator and the product's worker talking to it. */
export interface DocsAdminStack {
  emu: EmulatorHandle;
  worker: DocsAdminWorker;
  /** Stops the worker, then the emulator. */
  close(): Promise<void>;
}

/** The emulator (`emulatorOptions`) and startDocsAdminWorker on `env` with ADMIN_API_URL pointing at it. */
export async function startDocsAdminStack(
  env: TestWorkflowEnvironment,
  emulatorOptions: Partial<EmulatorOptions>,
  vars: Record<string, string>,
): Promise<DocsAdminStack> {
  const emu = await startEmulator(emulatorOptions);
  try {
    const worker = await startDocsAdminWorker(env, { ADMIN_API_URL: emu.url, ...vars });
    return {
      emu,
      worker,
      async close() {
        await worker.close();
        await emu.close();
      },
    };
  } catch (err) {
    await emu.close();
    throw err;
  }
}
