// Sign-on of `npm run cluster -- --sso` (docs/security-access.md): the OpenID provider (npm run
// sso-provider) on 127.0.0.1, its directory of people, apps and services and its signing key under
// .data/cluster/sso/ (made on first run, mode 0600), and what each component is given to use it: the
// server the provider's JWKS, the UI server its OIDC client, the codec server the issuer, the worker,
// the CLI and the webhook receiver a service's client credentials.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fetchServiceToken, serviceTokenSettingsFromEnv } from '../../src/connection/service-token';
import { ensureDirectory } from '../../sso-provider/directory';
import { DEFAULT_TOKEN_AUDIENCE } from '../../src/shared/roles';
import { ROOT } from '../tools';
import {
  CLUSTER_CODEC_HTTPS_URL,
  CLUSTER_DATA_DIR,
  CLUSTER_NAMESPACE,
  CLUSTER_PORTS,
  CLUSTER_UI_URL,
  HOST,
} from './layout';
import { TLS_FILES } from './tls';
import { answersOk, runningProcess, startDetached, stopRecorded, waitUntil } from './processes';

export const SSO_ISSUER = `http://${HOST}:${CLUSTER_PORTS.sso}`;
export const SSO_DIR = path.join(CLUSTER_DATA_DIR, 'sso');
export const SSO_FILES = {
  directory: path.join(SSO_DIR, 'directory.yaml'),
  signingKey: path.join(SSO_DIR, 'signing-key.json'),
  log: path.join(CLUSTER_DATA_DIR, 'sso-provider.log'),
  state: path.join(CLUSTER_DATA_DIR, 'sso-provider.json'),
};
export const UI_CALLBACK_URL = `${CLUSTER_UI_URL}/auth/sso/callback`;
/** The directory's OIDC client of the Web UI and the services the cluster's own programs use. */
export const UI_CLIENT_ID = 'temporal-ui';
export const SERVICES = { worker: 'docs-admin-worker', cli: 'docs-admin-cli', setup: 'docs-admin-setup' } as const;

/** A service's or app's secret file, as the directory names it (relative to the directory's folder). */
const secretFileOf = (clientId: string) => path.join(SSO_DIR, `${clientId}.secret`);

export function isProviderHealthy(): Promise<boolean> {
  return answersOk(`${SSO_ISSUER}/.well-known/openid-configuration`);
}

/**
 * The directory (made on first run: its people's passwords are returned then, and never again) and the
 * provider, started unless it runs.
 */
export async function ensureSsoProvider(log: (line: string) => void): Promise<{ passwords?: Record<string, string> }> {
  const made = ensureDirectory(SSO_FILES.directory, { namespace: CLUSTER_NAMESPACE, uiRedirectUri: UI_CALLBACK_URL });
  if (made.created) log(`sign-on: created ${SSO_FILES.directory} (people, the Web UI's client, the services)`);
  if (!runningProcess(SSO_FILES.state) || !(await isProviderHealthy())) {
    log(`OpenID provider: starting at ${SSO_ISSUER}`);
    const started = startDetached(process.execPath, ['--import', 'tsx', path.join(ROOT, 'sso-provider', 'main.ts')], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        SSO_ISSUER,
        SSO_DIRECTORY_FILE: SSO_FILES.directory,
        SSO_SIGNING_KEY_FILE: SSO_FILES.signingKey,
        SSO_AUDIENCE: DEFAULT_TOKEN_AUDIENCE,
        // Tokens' lifetimes, when this process was given any (the sign-on test shortens the services').
        ...pick(process.env, ['SSO_ACCESS_TOKEN_TTL_SECONDS', 'SSO_SERVICE_TOKEN_TTL_SECONDS']),
      },
      log: SSO_FILES.log,
      stateFile: SSO_FILES.state,
    });
    await waitUntil('the OpenID provider', isProviderHealthy, started, SSO_FILES.log, 60_000);
  }
  return made.created ? { passwords: made.passwords } : {};
}

export async function stopSsoProvider(): Promise<boolean> {
  return (await stopRecorded(SSO_FILES.state)) !== undefined;
}

/** deploy/temporal/config.yaml's sign-on variables (the names of Temporal's server image). */
export function ssoServerEnv(): Record<string, string> {
  return { TEMPORAL_JWT_KEY_SOURCE1: `${SSO_ISSUER}/jwks`, TEMPORAL_JWT_AUDIENCE: DEFAULT_TOKEN_AUDIENCE };
}

/** deploy/temporal/ui.yaml's sign-on variables: the login through the provider, tokens to the codec server. */
export function ssoUiEnv(): Record<string, string> {
  return {
    TEMPORAL_AUTH_ENABLED: 'true',
    TEMPORAL_AUTH_PROVIDER_URL: SSO_ISSUER,
    TEMPORAL_AUTH_CLIENT_ID: UI_CLIENT_ID,
    TEMPORAL_AUTH_CLIENT_SECRET: readFileSync(secretFileOf(UI_CLIENT_ID), 'utf8').trim(),
    TEMPORAL_AUTH_CALLBACK_URL: UI_CALLBACK_URL,
    TEMPORAL_CODEC_ENDPOINT: CLUSTER_CODEC_HTTPS_URL,
    TEMPORAL_CODEC_PASS_ACCESS_TOKEN: 'true',
  };
}

/**
 * The codec server accepts the provider's access tokens (and still the token file's), over HTTPS with the
 * frontend's certificate: the Web UI sends a person's token only to an https:// codec endpoint.
 */
export function ssoCodecEnv(): Record<string, string> {
  return {
    CODEC_SERVER_OIDC_ISSUER: SSO_ISSUER,
    CODEC_SERVER_OIDC_AUDIENCE: DEFAULT_TOKEN_AUDIENCE,
    CODEC_SERVER_TLS_CERT_FILE: TLS_FILES.serverCert,
    CODEC_SERVER_TLS_KEY_FILE: TLS_FILES.serverKey,
  };
}

/** What a program needs to sign in as `clientId` (src/connection/service-token.ts). */
export function serviceEnv(clientId: string): Record<string, string> {
  return {
    TEMPORAL_OIDC_ISSUER: SSO_ISSUER,
    TEMPORAL_OIDC_CLIENT_ID: clientId,
    TEMPORAL_OIDC_CLIENT_SECRET_FILE: secretFileOf(clientId),
  };
}

/** An access token for `clientId` now (the cluster's own setup; long-running programs refresh theirs). */
export async function serviceToken(clientId: string): Promise<string> {
  return fetchServiceToken(serviceTokenSettingsFromEnv(serviceEnv(clientId))!);
}

const pick = (env: NodeJS.ProcessEnv, names: string[]): Record<string, string> =>
  Object.fromEntries(names.flatMap((name) => (env[name] ? [[name, env[name]]] : [])));
