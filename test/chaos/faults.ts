// The emulator fault mix of the chaos suite, and the in-process worker it runs against (the admin API
// client's timeouts are shortened so a "slow" fault outlasts them in seconds, not the default 45 s).
import { readFile } from 'node:fs/promises';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { AdminApiClient } from '../../src/api/client';
import { loadWorkerConfig } from '../../src/config';
import type { EmulatorHandle, FaultRule } from '../../emulator';
import { noopMetrics } from '../../src/observability/metrics';
import { createDocsAdminWorker, installRuntime, type DocsAdminWorker } from '../../src/worker';

/** Client timeouts for fault tests: a 'slow' fault of SLOW_MS outlasts them. */
export const FAULT_TIMEOUTS = { connectMs: 1_000, headersMs: 1_500, bodyMs: 1_500, totalMs: 2_000 };
export const SLOW_MS = 3_000;

/**
 * 10 % 5xx (500 before or after the change took effect, 503 with Retry-After), 5 % connection resets
 * (before or after), 5 % slow beyond the client timeout, 2 % non-JSON 2xx bodies, on every route
 * (downloads of bundle links included). Shares are of all calls: each rule's probability is conditional
 * on the rules before it not firing (the injector tries them in order).
 */
export function faultMix(): FaultRule[] {
  const shares: [FaultRule['kind'], number, Partial<FaultRule>][] = [
    ['500-before-commit', 0.04, {}],
    ['500-after-commit', 0.03, {}],
    ['503', 0.03, { retryAfterSeconds: 1 }],
    ['reset-before-commit', 0.025, {}],
    ['reset-after-commit', 0.025, {}],
    ['slow', 0.05, { delayMs: SLOW_MS }],
    ['non-json', 0.02, {}],
  ];
  let remaining = 1;
  return shares.map(([kind, share, extra]) => {
    const probability = share / remaining;
    remaining -= share;
    return { route: '*', kind, probability, ...extra };
  });
}

export interface InProcessWorker {
  handle: DocsAdminWorker;
  client: Client;
  /** Every log line the worker wrote (already redacted by the worker's logger). */
  logs: string[];
  close(): Promise<void>;
}

const logs: string[] = [];
let runtimeReady: Promise<unknown> | undefined;

/** The docs-admin worker in this process (createDocsAdminWorker), its logs captured, short API timeouts. */
export async function startInProcessWorker(options: {
  address: string;
  taskQueue: string;
  emulator: EmulatorHandle;
  key: string;
  agentRateLimit?: string;
  /** A pre-built workflow bundle (several workers in one file bundle once). */
  workflowBundle?: WorkflowBundleWithSourceMap;
  /** KEEPER_SINKS_FILE, for a keeper's named sink. */
  sinksFile?: string;
}): Promise<InProcessWorker> {
  runtimeReady ??= installRuntime({
    logLevel: 'WARN',
    sdkMetrics: false,
    secrets: [],
    write: (line) => void logs.push(line),
  });
  await runtimeReady;
  const config = loadWorkerConfig({
    TEMPORAL_ADDRESS: options.address,
    TEMPORAL_TASK_QUEUE: options.taskQueue,
    ADMIN_API_URL: options.emulator.url,
    ADMIN_API_KEY: options.key,
    AGENT_RATE_LIMIT: options.agentRateLimit ?? '100000/1h',
    METRICS_PORT: '0',
    ...(options.sinksFile ? { KEEPER_SINKS_FILE: options.sinksFile } : {}),
  });
  const connection = await NativeConnection.connect({ address: options.address });
  const clientConnection = await Connection.connect({ address: options.address });
  const client = new Client({ connection: clientConnection });
  const api = new AdminApiClient({
    baseUrl: config.adminApiUrl,
    apiKey: config.adminApiKey,
    timeouts: FAULT_TIMEOUTS,
    logger: { warn: (line: string) => void logs.push(line) },
  });
  const handle = await createDocsAdminWorker(config, {
    connection,
    client,
    api,
    metrics: noopMetrics,
    metricsListen: false,
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : {}),
  });
  const running = handle.run();
  return {
    handle,
    client,
    logs,
    async close() {
      await handle.close();
      await running.catch(() => undefined);
      await api.close();
      await clientConnection.close();
      await connection.close();
    },
  };
}

/** GET a bundle link until it answers: true for 200 with a gzip body, false for 403/404/410 (broken). Transient faults are retried. */
export async function linkDownloads(url: string, attempts = 12): Promise<boolean> {
  for (let i = 0; i < attempts; i++) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(SLOW_MS + 2_000) });
      const body = Buffer.from(await res.arrayBuffer());
      if (res.status === 200) return body[0] === 0x1f && body[1] === 0x8b;
      if ([403, 404, 410].includes(res.status)) return false;
    } catch {
      // reset or timeout: injected, try again
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return false;
}

/** The bundleUrl of a file sink's JSON document, or undefined while there is none. */
export async function appliedUrl(file: string): Promise<string | undefined> {
  try {
    const doc = JSON.parse(await readFile(file, 'utf8')) as { staticExport?: { bundleUrl?: string } };
    return doc.staticExport?.bundleUrl;
  } catch {
    return undefined;
  }
}
