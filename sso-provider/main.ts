// `npm run sso-provider`: the sign-on provider (sso-provider/provider.ts) on loopback, for the cluster's
// sign-on (`npm run cluster -- --sso`) and its tests.
//   SSO_ISSUER                    the issuer URL, e.g. http://127.0.0.1:8636 (it listens there)
//   SSO_DIRECTORY_FILE            people, apps and services with their roles (re-read on change)
//   SSO_SIGNING_KEY_FILE          the private RS256 JWK (made on first start, mode 0600)
//   SSO_AUDIENCE                  the access tokens' `aud` (default urn:docs-admin:temporal)
//   SSO_ACCESS_TOKEN_TTL_SECONDS  access token lifetime (default 900)
//   SSO_SERVICE_TOKEN_TTL_SECONDS services' (client-credentials) token lifetime (default: the above)
import { existsSync } from 'node:fs';
import { DEFAULT_TOKEN_AUDIENCE } from '../src/shared/roles';
import { startSsoProvider } from './provider';
import { ensureSigningKey } from './signing-key';
import { runAsEntryPoint, stopOnSignal } from '../src/process/lifecycle';
import { Settings } from '../src/process/small-server';

export interface SsoProviderSettings {
  issuer: string;
  directoryFile: string;
  signingKeyFile: string;
  audience: string;
  accessTokenTtlSeconds: number;
  serviceTokenTtlSeconds: number;
}

const DEFAULT_TTL_SECONDS = 900;
const TTL_RANGE = { min: 1, max: 86_400, unit: 'seconds' };

/** The provider's settings from the environment; throws one line naming the variable at fault. */
export function ssoProviderSettings(env: NodeJS.ProcessEnv): SsoProviderSettings {
  const read = new Settings(env);
  const required = (name: string) =>
    read.required(name, 'npm run sso-provider needs SSO_ISSUER, SSO_DIRECTORY_FILE and SSO_SIGNING_KEY_FILE');
  const issuer = required('SSO_ISSUER');
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new Error(`SSO_ISSUER is not a URL: ${issuer}`);
  }
  if (!/^https?:$/.test(url.protocol) || url.origin !== issuer.replace(/\/$/, ''))
    throw new Error(`SSO_ISSUER must be an http(s) origin with no path, e.g. http://127.0.0.1:8636 (got ${issuer})`);
  const accessTokenTtlSeconds = read.int('SSO_ACCESS_TOKEN_TTL_SECONDS', DEFAULT_TTL_SECONDS, TTL_RANGE);
  return {
    issuer: url.origin,
    directoryFile: required('SSO_DIRECTORY_FILE'),
    signingKeyFile: required('SSO_SIGNING_KEY_FILE'),
    audience: read.text('SSO_AUDIENCE') ?? DEFAULT_TOKEN_AUDIENCE,
    accessTokenTtlSeconds,
    serviceTokenTtlSeconds: read.int('SSO_SERVICE_TOKEN_TTL_SECONDS', accessTokenTtlSeconds, TTL_RANGE),
  };
}

export async function main(env = process.env): Promise<void> {
  const settings = ssoProviderSettings(env);
  if (!existsSync(settings.directoryFile))
    throw new Error(
      `${settings.directoryFile}: no directory file (SSO_DIRECTORY_FILE); npm run cluster -- --sso makes one`,
    );
  const log = (line: string) => console.error(line);
  const signingKey = await ensureSigningKey(settings.signingKeyFile);
  const provider = await startSsoProvider({ ...settings, signingKey, log });
  log(
    `sso-provider: issuer ${settings.issuer}, directory ${settings.directoryFile}, audience ${settings.audience}, ` +
      `access tokens for ${settings.accessTokenTtlSeconds} s (services' ${settings.serviceTokenTtlSeconds} s)`,
  );
  stopOnSignal(() => provider.close());
}

if (require.main === module) runAsEntryPoint('sso-provider', () => main());
