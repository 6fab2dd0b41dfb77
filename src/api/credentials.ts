// The admin API's credentials: its connection settings checked (by the client and the worker's config;
// messages name the variable and never contain its value), and credentials removed from any text before
// it becomes an error message, a log line or a failure stored in workflow history: the configured
// key(s), `Bearer <token>` values, anything shaped like an admin key (`mint_...`) and the user:password
// of a URL (`postgres://app:secret@db`).

/** Admin keys begin with `mint_`. Returns a problem description that never contains the key. */
export function checkAdminApiKey(key: string | undefined): string | null {
  if (key === undefined || key === '') return 'ADMIN_API_KEY is not set';
  if (!key.startsWith('mint_')) return 'ADMIN_API_KEY must begin with "mint_" (an admin key)';
  if (key.length < 6 || /\s/.test(key))
    return 'ADMIN_API_KEY is malformed (empty after "mint_" or contains whitespace)';
  return null;
}

export function checkHttpUrl(name: string, value: string | undefined): string | null {
  if (!value) return `${name} is not set`;
  try {
    const url = new URL(value);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return `${name} must be an http(s) URL`;
    if (url.username || url.password) return `${name} must not carry credentials`;
    return null;
  } catch {
    return `${name} is not a valid URL`;
  }
}

const BEARER = /\b(Bearer)\s+[A-Za-z0-9._~+/=-]+/gi;
const ADMIN_KEY = /\bmint_[A-Za-z0-9._~+/=-]*/g;
const AUTH_HEADER = /(authorization["']?\s*[:=]\s*["']?)[^"',\r\n}]+/gi;
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]+@/gi;

export const REDACTED = '[redacted]';

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Returns `text` with every secret in `secrets` and every bearer token / admin key replaced. */
export function redact(text: string, secrets: readonly (string | undefined)[] = []): string {
  let out = text;
  for (const secret of secrets) {
    // Short strings would shred ordinary text; real keys are long. Any case: a status or message the
    // API echoes may come back lower-cased (src/api/schemas.ts).
    if (secret && secret.length >= 6) out = out.replace(new RegExp(escapeRegExp(secret), 'gi'), REDACTED);
  }
  return out
    .replace(AUTH_HEADER, `$1${REDACTED}`)
    .replace(BEARER, `$1 ${REDACTED}`)
    .replace(ADMIN_KEY, REDACTED)
    .replace(URL_CREDENTIALS, `$1${REDACTED}@`);
}
