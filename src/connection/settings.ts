// The one loader of Temporal connection settings, used by the worker, the client library (and so the
// CLI) and schedules. @temporalio/envconfig first (TEMPORAL_ADDRESS, TEMPORAL_API_KEY, TLS settings,
// TEMPORAL_PROFILE and its config file); then this project's defaults (docs/contract.md: 127.0.0.1:7233, namespace
// `default`, task queue `docs-admin`).
import type { ConnectionOptions } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { NativeConnectionOptions } from '@temporalio/worker';
import { DEFAULT_NAMESPACE, DEFAULT_TASK_QUEUE, DEFAULT_TEMPORAL_ADDRESS } from '../shared/defaults';

export interface TemporalConfig {
  address: string;
  namespace: string;
  taskQueue: string;
}

/** Where to connect and what to serve, from the environment alone (pure: no file is read). */
export function loadTemporalConfig(env: NodeJS.ProcessEnv): TemporalConfig {
  return {
    address: env.TEMPORAL_ADDRESS || DEFAULT_TEMPORAL_ADDRESS,
    namespace: env.TEMPORAL_NAMESPACE || DEFAULT_NAMESPACE,
    taskQueue: env.TEMPORAL_TASK_QUEUE || DEFAULT_TASK_QUEUE,
  };
}

/** The task queue a starter uses: the option, else TEMPORAL_TASK_QUEUE, else docs-admin. */
export function taskQueueOf(option: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return option || loadTemporalConfig(env).taskQueue;
}

/**
 * Connection options from the environment through @temporalio/envconfig (TEMPORAL_ADDRESS,
 * TEMPORAL_API_KEY, TLS settings, TEMPORAL_PROFILE/config file), with this project's default address.
 */
export function temporalConnectionOptions(
  env: NodeJS.ProcessEnv = process.env,
): ConnectionOptions & { address: string } {
  const vars = Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
  const { connectionOptions } = loadClientConnectConfig({ overrideEnvVars: vars });
  const { address } = loadTemporalConfig(env);
  return {
    ...(connectionOptions as ConnectionOptions),
    address: env.TEMPORAL_ADDRESS || connectionOptions.address || address,
  };
}

/** The same settings for the worker's NativeConnection (which takes string metadata only), at `address`. */
export function nativeConnectionOptions(env: NodeJS.ProcessEnv, address: string): NativeConnectionOptions {
  const { apiKey, tls, metadata } = temporalConnectionOptions(env);
  return {
    address,
    ...(typeof apiKey === 'string' ? { apiKey } : {}),
    ...(tls !== undefined && tls !== null ? { tls } : {}),
    ...(metadata ? { metadata: metadata as Record<string, string> } : {}),
  };
}
