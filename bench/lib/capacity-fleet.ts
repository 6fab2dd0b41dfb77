// Where the capacity benchmark runs and how its worker processes are started: the cluster's frontend,
// a namespace of its own (its limiter task queue, its server metrics and its rows are the benchmark's
// alone while other work shares the cluster), the product's worker and the naive one.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { SEARCH_ATTRIBUTE_REGISTRATION } from '../../src/shared/search-attributes';
import { findTemporalCli } from '../../scripts/tools';
import type { WorkerProcessOptions } from '../../test/chaos/helpers';

export const CLUSTER = process.env.CAPACITY_ADDRESS ?? '127.0.0.1:7633';
export const CAPACITY_NAMESPACE = 'docs-admin-capacity';
/** The naive shape runs in a namespace of its own, so the server's action metric tells the two apart. */
export const NAIVE_NAMESPACE = 'docs-admin-capacity-naive';
const KEY = 'mint_bench_capacity_key';

/** The product's worker (`npm run worker`) environment on a task queue of the run. */
export function fleetEnv(
  apiUrl: string,
  taskQueue: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: CLUSTER,
    TEMPORAL_NAMESPACE: CAPACITY_NAMESPACE,
    TEMPORAL_TASK_QUEUE: taskQueue,
    ADMIN_API_URL: apiUrl,
    ADMIN_API_KEY: KEY,
    AGENT_RATE_LIMIT: '100/1h',
    METRICS_PORT: '0',
    ...extra,
  };
}

export function naiveWorkerOptions(apiUrl: string, taskQueue: string): WorkerProcessOptions {
  return {
    env: fleetEnv(apiUrl, taskQueue, { TEMPORAL_NAMESPACE: NAIVE_NAMESPACE }),
    script: path.join(__dirname, '..', 'naive-activities.ts'),
    readyLine: 'naive worker started',
  };
}

/** Creates the benchmark's namespaces (and the product's search attributes) when missing; idempotent. */
export function ensureNamespaces(): void {
  const cli = (args: string[]) =>
    spawnSync(findTemporalCli() ?? 'temporal', [...args, '--address', CLUSTER], { encoding: 'utf8', timeout: 60_000 });
  for (const ns of [CAPACITY_NAMESPACE, NAIVE_NAMESPACE]) {
    if (cli(['operator', 'namespace', 'describe', '--namespace', ns]).status !== 0)
      cli(['operator', 'namespace', 'create', '--namespace', ns, '--retention', '72h']);
  }
  const listed = cli(['operator', 'search-attribute', 'list', '--namespace', CAPACITY_NAMESPACE]).stdout ?? '';
  for (const name of Object.keys(SEARCH_ATTRIBUTE_REGISTRATION).filter((n) => !listed.includes(n))) {
    const args = ['operator', 'search-attribute', 'create', '--namespace', CAPACITY_NAMESPACE, '--name', name];
    const created = cli([...args, '--type', 'Keyword']);
    if (created.status !== 0) throw new Error(`could not register ${name}: ${created.stderr}`);
  }
}
