// `npm run emulator`: the admin API emulator as a standalone process (default 127.0.0.1:4010).
// Environment: EMULATOR_HOST, EMULATOR_PORT, EMULATOR_PUBLIC_URL, EMULATOR_AGENT_ACTIVE_MS,
// EMULATOR_EXPORT_QUEUED_MS, EMULATOR_EXPORT_DURATION_MS, EMULATOR_EXPORT_PAGES, EMULATOR_UPDATE_BUILD_MS,
// EMULATOR_PROGRESS_SHAPE (linear|slow-start|stall-at-99|jumps), EMULATOR_RATE_LIMIT_COUNT,
// EMULATOR_RATE_LIMIT_WINDOW_MS, EMULATOR_RETRY_AFTER (seconds|http-date|none), EMULATOR_BUNDLE_TTL_MS,
// EMULATOR_NON_ENTERPRISE_KEYS, EMULATOR_VALID_KEYS, EMULATOR_READ_ONLY_KEYS, EMULATOR_IP_ALLOWLIST
// (comma-separated), EMULATOR_SEED, EMULATOR_LOG_REQUESTS=1.
// Faults and counters at runtime: POST /_emulator/faults, GET /_emulator/counters, POST /_emulator/reset;
// a key rotation: POST /_emulator/keys {"add": [...], "revoke": [...]}; a push to a project's deployment
// branch: POST /_emulator/push {"projectId", "domain"?, "sha"?, "message"?, "author"?, "filesChanged"?:
// {"added"?, "modified"?, "removed"?}} (lists of paths, as update-status documents them).
import type { EmulatorOptions, ProgressShape, RetryAfterForm } from './options';
import { Emulator } from './server';

function intFromEnv(name: string, min = 0): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  return value;
}

function oneOf<T extends string>(name: string, allowed: readonly T[]): T | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  if (!(allowed as readonly string[]).includes(raw)) throw new Error(`${name} must be one of ${allowed.join(', ')}`);
  return raw as T;
}

function listFromEnv(name: string): string[] | undefined {
  const raw = process.env[name];
  if (!raw) return undefined;
  return raw
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
}

function optionsFromEnv(): Partial<EmulatorOptions> {
  const options: Partial<EmulatorOptions> = {
    host: process.env.EMULATOR_HOST || '127.0.0.1',
    port: intFromEnv('EMULATOR_PORT') ?? 4010,
  };
  const set = <K extends keyof EmulatorOptions>(key: K, value: EmulatorOptions[K] | undefined): void => {
    if (value !== undefined) options[key] = value;
  };
  set('publicUrl', process.env.EMULATOR_PUBLIC_URL || undefined);
  set('agentActiveMs', intFromEnv('EMULATOR_AGENT_ACTIVE_MS'));
  set('exportQueuedMs', intFromEnv('EMULATOR_EXPORT_QUEUED_MS'));
  set('exportDurationMs', intFromEnv('EMULATOR_EXPORT_DURATION_MS'));
  set('exportTotalPages', intFromEnv('EMULATOR_EXPORT_PAGES', 1));
  set('updateBuildMs', intFromEnv('EMULATOR_UPDATE_BUILD_MS'));
  set(
    'progressShape',
    oneOf<ProgressShape>('EMULATOR_PROGRESS_SHAPE', ['linear', 'slow-start', 'stall-at-99', 'jumps']),
  );
  set('retryAfterForm', oneOf<RetryAfterForm>('EMULATOR_RETRY_AFTER', ['seconds', 'http-date', 'none']));
  set('bundleTtlMs', intFromEnv('EMULATOR_BUNDLE_TTL_MS', 1));
  set('seed', intFromEnv('EMULATOR_SEED'));
  const limit = intFromEnv('EMULATOR_RATE_LIMIT_COUNT', 1);
  const windowMs = intFromEnv('EMULATOR_RATE_LIMIT_WINDOW_MS', 1);
  if (limit !== undefined || windowMs !== undefined)
    options.rateLimit = { limit: limit ?? 100, windowMs: windowMs ?? 3_600_000 };
  set('nonEnterpriseKeys', listFromEnv('EMULATOR_NON_ENTERPRISE_KEYS'));
  set('validKeys', listFromEnv('EMULATOR_VALID_KEYS'));
  set('readOnlyKeys', listFromEnv('EMULATOR_READ_ONLY_KEYS'));
  set('ipAllowlist', listFromEnv('EMULATOR_IP_ALLOWLIST'));
  if (process.env.EMULATOR_LOG_REQUESTS === '1') options.logRequests = true;
  return options;
}

async function main(): Promise<void> {
  const emulator = new Emulator(optionsFromEnv());
  await emulator.listen();
  process.stdout.write(`admin API emulator listening on ${emulator.url}\n`);
  const stop = (): void => {
    emulator.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`emulator: ${(err as Error).message}\n`);
  process.exit(1);
});
