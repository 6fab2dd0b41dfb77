// The Temporal dev server used by `npm run server` and `npm start`: 127.0.0.1:7233, Web UI on 8233,
// SQLite in .data/, the project's search attributes registered.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { SEARCH_ATTRIBUTE_REGISTRATION } from '../src/shared/search-attributes';
import { DATA_DIR } from './tools';
import { waitFor } from './wait';

export const HOST = '127.0.0.1';
export const PORT = Number(process.env.TEMPORAL_PORT || 7233);
export const UI_PORT = Number(process.env.TEMPORAL_UI_PORT || 8233);
export const ADDRESS = `${HOST}:${PORT}`;
export const UI_URL = `http://${HOST}:${UI_PORT}`;
export const LOG_FILE = path.join(DATA_DIR, 'temporal.log');

/**
 * Server settings the worker's latency under bursts relies on (docs/operations.md, "Server settings",
 * gives the production equivalents). Eager activity execution: a workflow task that schedules an activity gets
 * the activity task back in its completion response, without a trip through matching. Fairness (which
 * implies the priority-aware matcher): backlogged tasks are dispatched by priority key, then in
 * proportion across fairness keys, so one project's burst of agent jobs (fairness key = project id)
 * does not hold another project's jobs behind it on the shared task queue.
 */
export const PERFORMANCE_DYNAMIC_CONFIG = [
  'system.enableActivityEagerExecution=true',
  'matching.useNewMatcher=true',
  'matching.enableFairness=true',
];

/**
 * Dynamic config of every dev server the project starts (npm run server, npm start, tests).
 * Update-with-start (early agent job id) needs multi-operation on some server versions. A single-node
 * dev server gains nothing from task-queue partitions, and with the default four a worker's few
 * pollers can leave a task in an unpolled partition until a long poll expires (~60 s).
 */
export const DEV_SERVER_DYNAMIC_CONFIG = [
  'frontend.enableExecuteMultiOperation=true',
  'matching.numTaskqueueReadPartitions=1',
  'matching.numTaskqueueWritePartitions=1',
  ...PERFORMANCE_DYNAMIC_CONFIG,
];

function cli(temporal: string, args: string[]) {
  return spawnSync(temporal, args, { encoding: 'utf8', timeout: 15_000 });
}

export function isHealthy(temporal: string): boolean {
  const result = cli(temporal, ['operator', 'cluster', 'health', '--address', ADDRESS]);
  return result.status === 0 && result.stdout.includes('SERVING');
}

export async function waitHealthy(temporal: string, timeoutMs = 60_000): Promise<void> {
  await waitFor(() => isHealthy(temporal), {
    timeoutMs,
    intervalMs: 500,
    what: `the dev server to become healthy (see ${LOG_FILE})`,
  });
}

/** start-dev registers them on a fresh database; this adds any missing on an older one. */
export function ensureSearchAttributes(temporal: string): void {
  const listed = cli(temporal, ['operator', 'search-attribute', 'list', '--address', ADDRESS]).stdout;
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTE_REGISTRATION)) {
    if (listed.includes(name)) continue;
    const created = cli(temporal, [
      'operator',
      'search-attribute',
      'create',
      '--name',
      name,
      '--type',
      type,
      '--address',
      ADDRESS,
    ]);
    if (created.status !== 0) throw new Error(`could not register search attribute ${name}: ${created.stderr.trim()}`);
  }
}

/**
 * Starts `temporal server start-dev` and resolves once it is healthy with its search attributes.
 * detached: survives this process (npm run server); else it is this process's child (npm start).
 */
export async function startDevServer(temporal: string, { detached }: { detached: boolean }): Promise<ChildProcess> {
  mkdirSync(DATA_DIR, { recursive: true });
  const args = [
    'server',
    'start-dev',
    '--ip',
    HOST,
    '--port',
    String(PORT),
    '--ui-ip',
    HOST,
    '--ui-port',
    String(UI_PORT),
    '--db-filename',
    path.join(DATA_DIR, 'temporal.db'),
    '--log-level',
    'warn',
    ...DEV_SERVER_DYNAMIC_CONFIG.flatMap((value) => ['--dynamic-config-value', value]),
    ...Object.entries(SEARCH_ATTRIBUTE_REGISTRATION).flatMap(([name, type]) => [
      '--search-attribute',
      `${name}=${type}`,
    ]),
  ];
  const log = openSync(LOG_FILE, 'a');
  const child = spawn(temporal, args, { detached, stdio: ['ignore', log, log] });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`the dev server exited (code ${code}); see ${LOG_FILE}`))),
  );
  await Promise.race([waitHealthy(temporal), exited]);
  ensureSearchAttributes(temporal);
  return child;
}
