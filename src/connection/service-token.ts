// A service's access token for Temporal under sign-on (docs/security-access.md): the worker and the CLI
// take it from the OpenID provider with the client-credentials grant, and take a new one before it
// expires (at 3/4 of its lifetime), so a long-running worker never holds an expired token and never
// restarts for one. A failed refresh is retried with back-off while the current token still works.
import { readFileSync } from 'node:fs';
import { DEFAULT_TOKEN_AUDIENCE } from '../shared/roles';

export const OIDC_ENV = {
  issuer: 'TEMPORAL_OIDC_ISSUER',
  clientId: 'TEMPORAL_OIDC_CLIENT_ID',
  clientSecretFile: 'TEMPORAL_OIDC_CLIENT_SECRET_FILE',
  audience: 'TEMPORAL_OIDC_AUDIENCE',
} as const;

export class ServiceTokenError extends Error {
  override readonly name = 'ServiceTokenError';
}

export interface ServiceTokenSettings {
  issuer: string;
  clientId: string;
  clientSecretFile: string;
  /** Sent as the `resource` parameter: the token's `aud`. */
  audience: string;
}

function readSecret(file: string): string {
  let secret: string;
  try {
    secret = readFileSync(file, 'utf8').trim();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new ServiceTokenError(`${OIDC_ENV.clientSecretFile}: cannot read ${file} (${code})`);
  }
  if (secret === '') throw new ServiceTokenError(`${OIDC_ENV.clientSecretFile}: ${file} is empty`);
  return secret;
}

/**
 * The service-token settings of the environment, or undefined without TEMPORAL_OIDC_ISSUER (and none of
 * the others). Partial settings, a bad issuer or an unreadable secret file throw one line.
 */
export function serviceTokenSettingsFromEnv(env: NodeJS.ProcessEnv): ServiceTokenSettings | undefined {
  const given = Object.values(OIDC_ENV).filter((name) => env[name]);
  if (given.length === 0) return undefined;
  const missing = [OIDC_ENV.issuer, OIDC_ENV.clientId, OIDC_ENV.clientSecretFile].filter((name) => !env[name]);
  if (missing.length > 0)
    throw new ServiceTokenError(`${given.join(', ')} set without ${missing.join(' and ')}: set all three or none`);
  if (env.TEMPORAL_API_KEY)
    throw new ServiceTokenError(`set ${OIDC_ENV.issuer} (tokens from a provider) or TEMPORAL_API_KEY, not both`);
  const issuer = env[OIDC_ENV.issuer]!.replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]/.test(issuer))
    throw new ServiceTokenError(`${OIDC_ENV.issuer} is not an http(s) URL: ${issuer}`);
  const clientSecretFile = env[OIDC_ENV.clientSecretFile]!;
  readSecret(clientSecretFile);
  return {
    issuer,
    clientId: env[OIDC_ENV.clientId]!,
    clientSecretFile,
    audience: env[OIDC_ENV.audience] || DEFAULT_TOKEN_AUDIENCE,
  };
}

/** Refresh at this share of a token's lifetime. */
export const REFRESH_AT = 0.75;
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 30_000;

/**
 * How long to wait before asking for the next token: until 3/4 of the current one's lifetime, or after
 * `failures` failed attempts since, 1 s doubling up to 30 s (never past 3/4 of the time it has left).
 */
export function refreshDelayMs(
  token: { obtainedAtMs: number; expiresAtMs: number },
  nowMs: number,
  failures: number,
): number {
  const lifetime = token.expiresAtMs - token.obtainedAtMs;
  if (failures === 0) return Math.max(0, token.obtainedAtMs + lifetime * REFRESH_AT - nowMs);
  const backoff = Math.min(FIRST_RETRY_MS * 2 ** (failures - 1), MAX_RETRY_MS);
  const left = token.expiresAtMs - nowMs;
  return left > 0 ? Math.max(FIRST_RETRY_MS, Math.min(backoff, left * REFRESH_AT)) : backoff;
}

interface Token {
  value: string;
  obtainedAtMs: number;
  expiresAtMs: number;
}

/** The provider's token endpoint, from its discovery document. */
async function tokenEndpoint(issuer: string): Promise<string> {
  const res = await fetch(`${issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new Error(`discovery answered HTTP ${res.status}`);
  const endpoint = ((await res.json()) as { token_endpoint?: unknown }).token_endpoint;
  if (typeof endpoint !== 'string') throw new Error('the discovery document names no token_endpoint');
  return endpoint;
}

/** One client-credentials token. Errors name the status and the provider's error code, never the secret. */
async function requestToken(settings: ServiceTokenSettings, endpoint: string): Promise<Token> {
  const credentials = `${encodeURIComponent(settings.clientId)}:${encodeURIComponent(readSecret(settings.clientSecretFile))}`;
  const obtainedAtMs = Date.now();
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(credentials).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource: settings.audience }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok || typeof body.access_token !== 'string') {
    const reason = typeof body.error === 'string' ? `: ${body.error}` : '';
    throw new Error(`the token endpoint answered HTTP ${res.status}${reason}`);
  }
  const lifetimeS = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : 300;
  return { value: body.access_token, obtainedAtMs, expiresAtMs: obtainedAtMs + lifetimeS * 1000 };
}

/** A failure as a few words: fetch's own message says only "fetch failed", its cause has the code. */
function reasonOf(err: unknown): string {
  const code = ((err as Error).cause as NodeJS.ErrnoException | undefined)?.code;
  return `${(err as Error).message}${code ? ` (${code})` : ''}`;
}

const newToken = async (settings: ServiceTokenSettings): Promise<Token> =>
  requestToken(settings, await tokenEndpoint(settings.issuer));

/** A token now, or one line naming the service, the issuer and why not. */
async function firstToken(settings: ServiceTokenSettings): Promise<Token> {
  return newToken(settings).catch((err: unknown) => {
    const reason = `cannot get a token for ${settings.clientId} from ${settings.issuer}: ${reasonOf(err)}`;
    throw new ServiceTokenError(reason, { cause: err });
  });
}

/**
 * One token, not refreshed: for a program that calls and exits (the cluster's setup, `docs-admin token`).
 * A failure throws one line.
 */
export async function fetchServiceToken(settings: ServiceTokenSettings): Promise<string> {
  return (await firstToken(settings)).value;
}

export interface ServiceTokenSourceOptions {
  /** One line per failed refresh (no secret, no token). */
  log?: (line: string) => void;
}

/** The current token of a service, refreshed in the background until closed. */
export class ServiceTokenSource {
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly listeners: ((token: string) => unknown)[] = [];

  private constructor(
    readonly settings: ServiceTokenSettings,
    private token: Token,
    private readonly log: (line: string) => void,
  ) {
    this.schedule();
  }

  /** Fetches the first token (a failure throws one line) and starts refreshing. */
  static async start(settings: ServiceTokenSettings, options: ServiceTokenSourceOptions = {}) {
    const token = await firstToken(settings);
    return new ServiceTokenSource(settings, token, options.log ?? ((line) => console.error(line)));
  }

  /** The token to send now. */
  current(): string {
    return this.token.value;
  }

  /** Called with each new token (the worker's NativeConnection.setApiKey). */
  onRefresh(listener: (token: string) => unknown): void {
    this.listeners.push(listener);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.closed) return;
    // unref: a refresh timer alone keeps no process alive.
    this.timer = setTimeout(() => void this.refresh(), refreshDelayMs(this.token, Date.now(), this.failures));
    this.timer.unref();
  }

  private async refresh(): Promise<void> {
    try {
      const token = await newToken(this.settings);
      if (this.closed) return;
      this.token = token;
      this.failures = 0;
      for (const listener of this.listeners) listener(token.value);
    } catch (err) {
      this.failures += 1;
      const leftS = Math.max(0, Math.round((this.token.expiresAtMs - Date.now()) / 1000));
      this.log(
        `service token: cannot refresh the token of ${this.settings.clientId} from ${this.settings.issuer} ` +
          `(${reasonOf(err)}); retrying, the current token ${leftS > 0 ? `works ${leftS} s more` : 'has expired'}`,
      );
    }
    this.schedule();
  }
}
