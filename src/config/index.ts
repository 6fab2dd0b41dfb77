// Worker and CLI configuration from the environment. Takes an env object (and reads only the admin key
// file it names), returns a config or every problem at once, each naming the variable (never echoing a
// secret's value).
import { checkAdminApiKey, checkHttpUrl } from '../api/credentials';
import { readKeyFile } from '../api/key-source';
import { loadTemporalConfig, type TemporalConfig } from '../connection/settings';
import { type HostRule, parseHostRules } from '../policies/bundle-hosts';
import { type RateWindow, rateWindowProblems } from '../policies/validation/rate-limiter';
import { DEFAULT_SHUTDOWN_GRACE_TIME_MS } from '../shared/defaults';

export { checkAdminApiKey, checkHttpUrl } from '../api/credentials';
export { loadTemporalConfig, type TemporalConfig } from '../connection/settings';

/** AGENT_RATE_LIMIT: permits per window. */
export type RateLimit = RateWindow;

export interface WorkerConfig extends TemporalConfig {
  adminApiUrl: string;
  /** The admin key: ADMIN_API_KEY, or what ADMIN_API_KEY_FILE held at start-up. */
  adminApiKey: string;
  /** ADMIN_API_KEY_FILE: the client re-reads it when it changes and after a 401 (a rotated key). */
  adminApiKeyFile?: string;
  agentRateLimit: RateLimit;
  /** Port of the Prometheus endpoint; 0 disables it. */
  metricsPort: number;
  /**
   * METRICS_PORT was not set, so metricsPort is the default (9464): when another process holds it
   * (a second worker on the host), any free port will do. An explicit port that is taken is an error.
   */
  metricsPortIsDefault?: boolean;
  /** Interface the Prometheus endpoint binds to (METRICS_HOST, default 127.0.0.1). */
  metricsHost?: string;
  /** LOG_LEVEL: TRACE, DEBUG, INFO (default), WARN or ERROR. */
  logLevel?: LogLevelName;
  /** LOG_FORMAT: `text` (default) or `json` (one JSON object per line). */
  logFormat?: 'text' | 'json';
  /** SHUTDOWN_GRACE_TIME: how long in-flight activities get to finish on SIGTERM before they are cancelled (default 30s). */
  shutdownGraceTimeMs?: number;
  /** PAYLOAD_ENCRYPTION_KEYS_FILE: payloads are encrypted with its keys (src/codec); unset: plain. */
  payloadKeysFile?: string;
  /** KEEPER_SINKS_FILE: the named sinks keepers may apply bundles through; unset: none (every keeper is refused). */
  sinksFile?: string;
  /** BUNDLE_ALLOWED_HOSTS: hosts bundle links may be downloaded from besides the admin API's own. */
  bundleAllowedHosts?: HostRule[];
}

/** The Prometheus endpoint's port when METRICS_PORT is not set (the OpenTelemetry exporter's usual port). */
export const DEFAULT_METRICS_PORT = 9464;

export type LogLevelName = 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
const LOG_LEVELS: readonly LogLevelName[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];

/** Parses a duration such as `30s`, `500ms`, `2m`, `1h` or a bare number of milliseconds. */
export function parseDuration(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text);
  if (!match) throw new Error(`expected a duration such as 30s, 500ms, 5m or 1h, got "${text}"`);
  return Math.round(Number(match[1]) * UNIT_MS[match[2] ?? 'ms']!);
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
  }
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `100/1h`, `100/10s`, `5/500ms` into a limit per window. */
export function parseRateLimit(text: string): RateLimit {
  const match = /^\s*(\d+)\s*\/\s*(\d+(?:\.\d+)?)?\s*(ms|s|m|h|d)\s*$/.exec(text);
  if (!match) throw new Error(`expected <count>/<window> such as 100/1h or 100/10s, got "${text}"`);
  const limit = Number(match[1]);
  const windowMs = Math.round(Number(match[2] ?? '1') * UNIT_MS[match[3] as string]!);
  // The bounds every limiter keeps (it refuses a start outside them, and asks naming another window).
  const problems = rateWindowProblems({ limit, windowMs });
  if (problems.length > 0) throw new Error(`${problems.join('; ')} (got "${text.trim()}")`);
  return { limit, windowMs };
}

type AdminKeyConfig = Pick<WorkerConfig, 'adminApiKey' | 'adminApiKeyFile'>;

/**
 * ADMIN_API_KEY or ADMIN_API_KEY_FILE, exactly one. The file is read once here (the one read of a file
 * in this module), so a missing or malformed key file stops the worker at start-up with its path.
 */
function adminKeyOf(env: NodeJS.ProcessEnv): AdminKeyConfig | { problem: string } {
  const file = env.ADMIN_API_KEY_FILE;
  if (file && env.ADMIN_API_KEY)
    return { problem: 'ADMIN_API_KEY and ADMIN_API_KEY_FILE are both set: set only one of them' };
  if (!file) {
    const problem = checkAdminApiKey(env.ADMIN_API_KEY);
    return problem ? { problem } : { adminApiKey: env.ADMIN_API_KEY as string };
  }
  try {
    return { adminApiKey: readKeyFile(file), adminApiKeyFile: file };
  } catch (err) {
    return { problem: (err as Error).message };
  }
}

/** host, host:port or [IPv6]:port: what the worker's gRPC connection accepts (checked before connecting). */
const TEMPORAL_ADDRESS_FORM = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(?::\d{1,5})?$/;

export function loadWorkerConfig(env: NodeJS.ProcessEnv): WorkerConfig {
  const problems: string[] = [];
  const urlProblem = checkHttpUrl('ADMIN_API_URL', env.ADMIN_API_URL);
  if (urlProblem) problems.push(urlProblem);
  const key = adminKeyOf(env);
  if ('problem' in key) problems.push(key.problem);

  /** The variable parsed, or `fallback` when it is unset or empty (and its problem noted when it is bad). */
  const parsed = <T>(name: string, parse: (text: string) => T, fallback: T): T => {
    const text = env[name];
    if (!text) return fallback;
    try {
      return parse(text);
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
      return fallback;
    }
  };
  const agentRateLimit = parsed('AGENT_RATE_LIMIT', parseRateLimit, { limit: 100, windowMs: UNIT_MS.h! });

  const address = env.TEMPORAL_ADDRESS;
  if (address && !TEMPORAL_ADDRESS_FORM.test(address)) {
    problems.push(
      'TEMPORAL_ADDRESS must be host:port, e.g. 127.0.0.1:7233 or temporal.example.com:7233 ([::1]:7233 for IPv6)',
    );
  }

  const metricsPortIsDefault = env.METRICS_PORT === undefined || env.METRICS_PORT === '';
  const metricsPort = metricsPortIsDefault ? DEFAULT_METRICS_PORT : Number(env.METRICS_PORT);
  if (!Number.isInteger(metricsPort) || metricsPort < 0 || metricsPort > 65535) {
    problems.push('METRICS_PORT must be a port number (0 disables metrics)');
  }

  const metricsHost = env.METRICS_HOST || '127.0.0.1';
  if (/[\s/]/.test(metricsHost))
    problems.push('METRICS_HOST must be an interface address such as 127.0.0.1 or 0.0.0.0');

  const logLevel = (env.LOG_LEVEL || 'INFO').toUpperCase() as LogLevelName;
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  const logFormat = (env.LOG_FORMAT || 'text').toLowerCase();
  if (logFormat !== 'text' && logFormat !== 'json') problems.push('LOG_FORMAT must be text or json');

  const shutdownGraceTimeMs = parsed('SHUTDOWN_GRACE_TIME', parseDuration, DEFAULT_SHUTDOWN_GRACE_TIME_MS);
  const bundleAllowedHosts = parsed('BUNDLE_ALLOWED_HOSTS', parseHostRules, [] as HostRule[]);

  if (problems.length > 0) throw new ConfigError(problems);
  return {
    ...loadTemporalConfig(env),
    adminApiUrl: env.ADMIN_API_URL as string,
    ...(key as AdminKeyConfig),
    agentRateLimit,
    metricsPort,
    metricsPortIsDefault,
    metricsHost,
    logLevel,
    logFormat: logFormat as 'text' | 'json',
    shutdownGraceTimeMs,
    ...(env.PAYLOAD_ENCRYPTION_KEYS_FILE ? { payloadKeysFile: env.PAYLOAD_ENCRYPTION_KEYS_FILE } : {}),
    ...(env.KEEPER_SINKS_FILE ? { sinksFile: env.KEEPER_SINKS_FILE } : {}),
    bundleAllowedHosts,
  };
}
