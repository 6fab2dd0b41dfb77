// Connections from the settings of src/connection/settings.ts: the client's (client library and CLI)
// and the worker's NativeConnection, which its activities' Client shares (src/worker/worker.ts).
import { Client, Connection } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { payloadEncryptionFromEnv } from '../codec';
import { clientInterceptors, startTracing } from '../observability/tracing';
import { TemporalUnreachableError, probeTcp } from './reach';
import { ServiceTokenSource, serviceTokenSettingsFromEnv } from './service-token';
import { loadTemporalConfig, nativeConnectionOptions, temporalConnectionOptions } from './settings';
import { probeTls, tlsRefusalReason } from './tls-probe';

export interface ConnectClientOptions {
  /** Give up connecting after this long (default 5000 ms). */
  connectTimeoutMs?: number;
}

/**
 * A Client for TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE (defaults 127.0.0.1:7233, default). Fails fast
 * with a TemporalUnreachableError (one clear line) when no server answers.
 */
export async function connectClient(
  env: NodeJS.ProcessEnv = process.env,
  options: ConnectClientOptions = {},
): Promise<Client> {
  const { address } = temporalConnectionOptions(env);
  const timeoutMs = options.connectTimeoutMs ?? 5_000;
  // A bad key file or token setting is the first thing to fix: it fails before any connection attempt.
  payloadEncryptionFromEnv(env);
  serviceTokenSettingsFromEnv(env);
  // Before the client exists: its interceptors depend on it (the CLI has started it already, under its name).
  await startTracing(env, 'docs-admin-client');
  // A plain TCP probe first: a refused or unroutable address fails in milliseconds with the real
  // reason, instead of gRPC's reconnect loop running out the whole connect timeout.
  await probeTcp(address, timeoutMs);
  return connectClientAt(env, address, loadTemporalConfig(env).namespace, timeoutMs);
}

/**
 * A Client on the environment's connection settings at `address` (no probe), encrypting payloads when
 * PAYLOAD_ENCRYPTION_KEYS_FILE is set (a bad key file throws KeyFileError before connecting).
 */
async function connectClientAt(
  env: NodeJS.ProcessEnv,
  address: string,
  namespace: string,
  connectTimeoutMs: number,
): Promise<Client> {
  const dataConverter = payloadEncryptionFromEnv(env)?.dataConverter;
  const tokens = await serviceTokens(env);
  const options = temporalConnectionOptions(env);
  const connection = await Connection.connect({
    ...options,
    ...(tokens ? { apiKey: () => tokens.current(), tls: options.tls ?? false } : {}),
    address,
    connectTimeout: connectTimeoutMs,
  }).catch(async (err: unknown) => {
    tokens?.close();
    throw await connectError(env, address, err);
  });
  if (tokens) {
    closeWith(connection, tokens);
    sources.set(connection, tokens);
  }
  return new Client({ connection, namespace, dataConverter, interceptors: clientInterceptors() });
}

const sources = new WeakMap<object, ServiceTokenSource>();

/** The token a client's connection sends under sign-on (TEMPORAL_OIDC_*), else undefined: for messages only. */
export function serviceTokenOf(connection: object): string | undefined {
  return sources.get(connection)?.current();
}

/** The service's token source under sign-on (TEMPORAL_OIDC_*), its first token fetched; else undefined. */
async function serviceTokens(
  env: NodeJS.ProcessEnv,
  log?: (line: string) => void,
): Promise<ServiceTokenSource | undefined> {
  const settings = serviceTokenSettingsFromEnv(env);
  return settings && ServiceTokenSource.start(settings, { log });
}

/** Every owner of a connection closes it (the CLI, the worker, the webhooks): its token source stops then. */
function closeWith(connection: { close(): Promise<void> }, tokens: ServiceTokenSource): void {
  const close = connection.close.bind(connection);
  connection.close = async () => {
    tokens.close();
    await close();
  };
}

/**
 * The worker's NativeConnection to `address` with the environment's TLS, API key and metadata; under
 * sign-on, with the service's token, replaced on the connection at each refresh (`log`: its failures).
 */
export async function connectNative(
  env: NodeJS.ProcessEnv,
  address: string,
  { log = (line: string) => console.error(line) }: { log?: (line: string) => void } = {},
): Promise<NativeConnection> {
  // The worker's SDK is loaded here, not with this module: the CLI and the client library never need it,
  // and it was half of the CLI's start (its native bridge and some thousand modules).
  const { NativeConnection } = await import('@temporalio/worker');
  const tokens = await serviceTokens(env, log);
  const options = nativeConnectionOptions(env, address);
  const connection = await NativeConnection.connect({
    ...options,
    ...(tokens ? { apiKey: tokens.current(), tls: options.tls ?? false } : {}),
  }).catch(async (err: unknown) => {
    tokens?.close();
    throw await connectError(env, address, err);
  });
  if (tokens) {
    tokens.onRefresh((token) =>
      connection.setApiKey(token).catch((err: unknown) => {
        log(`service token: cannot give the connection its new token: ${(err as Error).message}`);
      }),
    );
    closeWith(connection, tokens);
  }
  return connection;
}

/** A failed connect as one line: TLS named when it is the reason (tls-probe.ts), else unreachable. */
async function connectError(env: NodeJS.ProcessEnv, address: string, cause: unknown): Promise<Error> {
  const { tls } = temporalConnectionOptions(env);
  const client = {
    tls: tls !== undefined && tls !== null && tls !== false,
    clientCertificate: typeof tls === 'object' && tls !== null && tls.clientCertPair !== undefined,
  };
  const probe = await probeTls(address).catch(() => 'plain' as const);
  const reason = tlsRefusalReason(address, probe, client);
  return new TemporalUnreachableError(address, reason ? { cause, reason } : { cause });
}
