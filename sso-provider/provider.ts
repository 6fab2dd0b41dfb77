// The sign-on provider: oidc-provider (a certified OpenID Connect implementation) with the people, apps
// and services of the directory (directory.ts). Access tokens are RS256 JWTs for one resource, the
// audience Temporal and the codec server expect, carrying the `permissions` claim of the user's or the
// service's roles (shared/roles.ts). People log in on this module's own small form; consent is implied
// for the directory's apps (the company that lists an app in the file has consented for its people).
import { randomBytes } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { JWK } from 'jose';
import type { errors as oidcErrors, InteractionDetails, Token } from 'oidc-provider';
import type OidcProvider from 'oidc-provider';
import type MemoryAdapter from 'oidc-provider/lib/adapters/memory_adapter.js';
import { listen, readBody, sendError, StatusError } from '../src/process/small-server';
import { permissionsFor, type Role } from '../src/shared/roles';
import { clientSecret, type Directory, noUserHash, verifyPassword, watchDirectory } from './directory';
import { loginPage } from './login-page';

/** The scope of the one resource server (Temporal): what a code's access token is granted. */
export const RESOURCE_SCOPE = 'temporal';
/** A login form's body is two short fields: anything longer is refused unread. */
const MAX_FORM_BYTES = 8 * 1024;

export interface SsoProviderOptions {
  /** The issuer URL (`iss`), an origin: the provider listens on its host and port. */
  issuer: string;
  directoryFile: string;
  /** The private RS256 JWK that signs ID and access tokens (signing-key.ts). */
  signingKey: JWK;
  /** The access tokens' `aud`. */
  audience: string;
  accessTokenTtlSeconds: number;
  /** The lifetime of services' (client-credentials) tokens: they refresh theirs by themselves. */
  serviceTokenTtlSeconds: number;
  log: (line: string) => void;
}

export interface SsoProvider {
  url: string;
  close(): Promise<void>;
}

/** The client metadata oidc-provider reads for a client id: an app, a service, or none. */
function clientMetadata(directoryFile: string, directory: Directory, id: string) {
  const app = directory.apps.find((a) => a.clientId === id);
  if (app)
    return {
      client_id: id,
      client_secret: clientSecret(directoryFile, app),
      redirect_uris: app.redirectUris,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    };
  const service = directory.services.find((s) => s.clientId === id);
  if (service)
    return {
      client_id: id,
      client_secret: clientSecret(directoryFile, service),
      redirect_uris: [],
      grant_types: ['client_credentials'],
      response_types: [],
    };
  return undefined;
}

/** The roles behind a token: its person's, else (client credentials) its service's; none when gone. */
function rolesOf(directory: Directory, token: Token): Record<string, Role> {
  if (token.accountId !== undefined) return directory.users.find((u) => u.username === token.accountId)?.roles ?? {};
  return directory.services.find((s) => s.clientId === token.clientId)?.roles ?? {};
}

/** The form posted, read to its cap: a longer one is a 413. */
async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  return new URLSearchParams((await readBody(req, MAX_FORM_BYTES)).toString('utf8'));
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(body);
}

/** oidc-provider's configuration: the directory's clients and accounts, JWT access tokens for `audience`. */
function providerConfiguration(
  options: SsoProviderOptions,
  directory: () => Directory,
  Memory: typeof MemoryAdapter,
  errors: typeof oidcErrors,
): Record<string, unknown> {
  const { directoryFile, audience, log, accessTokenTtlSeconds: ttl, serviceTokenTtlSeconds: serviceTtl } = options;
  // Clients are looked up in the directory on each use (oidc-provider caches them by their metadata),
  // so an app or service added, changed or removed in the file counts from the next request on.
  class DirectoryAdapter extends Memory {
    override async find(id: string) {
      if (this.model !== 'Client') return super.find(id);
      try {
        return clientMetadata(directoryFile, directory(), id);
      } catch (err) {
        log(`sso-provider: ${(err as Error).message}`);
        return undefined;
      }
    }
  }
  const resourceServer = (_ctx: unknown, resource: string, client?: { grantTypes?: string[] }) => {
    if (resource !== audience) throw new errors.InvalidTarget();
    const service = client?.grantTypes?.includes('client_credentials') ?? false;
    return {
      scope: RESOURCE_SCOPE,
      audience,
      accessTokenTTL: service ? serviceTtl : ttl,
      accessTokenFormat: 'jwt',
      jwt: { sign: { alg: 'RS256' } },
    };
  };
  return {
    adapter: DirectoryAdapter,
    claims: { openid: ['sub'], profile: ['name'], email: ['email'] },
    // The Web UI reads the person's name and email from the ID token.
    conformIdTokenClaims: false,
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    extraTokenClaims: (_ctx: unknown, token: Token) => ({ permissions: permissionsFor(rolesOf(directory(), token)) }),
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => audience,
        useGrantedResource: () => true,
        getResourceServerInfo: resourceServer,
      },
    },
    findAccount: (_ctx: unknown, id: string) => {
      const user = directory().users.find((u) => u.username === id);
      if (!user) return undefined;
      return { accountId: id, claims: () => ({ sub: id, name: user.name, email: user.email }) };
    },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    jwks: { keys: [options.signingKey] },
    // PKCE for public clients only: the Web UI is a confidential client and its oauth2 library sends none.
    pkce: { required: (_ctx: unknown, client: { clientAuthMethod: string }) => client.clientAuthMethod === 'none' },
    ttl: {
      AccessToken: ttl,
      ClientCredentials: serviceTtl,
      AuthorizationCode: 60,
      IdToken: 3600,
      Interaction: 600,
      Grant: 12 * 3600,
      Session: 12 * 3600,
      RefreshToken: 12 * 3600,
    },
  };
}

/** The login form's GET and POST for interaction `uid`, and the implied consent of a signed-in person. */
function interactionHandler(provider: OidcProvider, directory: () => Directory, audience: string) {
  /** The directory's consent for an app: the requested OpenID scopes and the resource's scope. */
  async function grantFor(details: InteractionDetails, accountId: string): Promise<string> {
    const grant = new provider.Grant({ accountId, clientId: String(details.params.client_id) });
    grant.addOIDCScope(String(details.params.scope ?? 'openid'));
    grant.addResourceScope(audience, RESOURCE_SCOPE);
    return grant.save();
  }

  return async (req: IncomingMessage, res: ServerResponse, uid: string): Promise<void> => {
    let details: InteractionDetails;
    try {
      details = await provider.interactionDetails(req, res);
    } catch {
      throw new StatusError(400, 'This sign-in has expired or was never started: start again from the app.');
    }
    if (details.uid !== uid) throw new StatusError(400, 'This sign-in does not match this browser.');
    const signedIn = details.session?.accountId;
    if (details.prompt.name === 'consent' && signedIn) {
      const grantId = await grantFor(details, signedIn);
      return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    }
    if (req.method === 'GET') return send(res, 200, 'text/html; charset=utf-8', loginPage(uid));
    if (req.method !== 'POST') throw new StatusError(405, 'GET or POST');
    const form = await readForm(req);
    const username = form.get('username') ?? '';
    const user = directory().users.find((u) => u.username === username);
    // The same scrypt work for an unknown user: the answer's time does not tell which names exist.
    const passwordOk = await verifyPassword(form.get('password') ?? '', user?.password ?? noUserHash());
    if (!user || !passwordOk)
      return send(res, 401, 'text/html; charset=utf-8', loginPage(uid, { username, error: true }));
    const grantId = await grantFor(details, user.username);
    await provider.interactionFinished(req, res, { login: { accountId: user.username }, consent: { grantId } });
  };
}

export async function startSsoProvider(options: SsoProviderOptions): Promise<SsoProvider> {
  const { default: Provider, errors } = await import('oidc-provider');
  const { default: Memory } = await import('oidc-provider/lib/adapters/memory_adapter.js');
  const { issuer, log } = options;
  const directory = watchDirectory(options.directoryFile, (problem) => log(`sso-provider: ${problem}`));
  const provider = new Provider(issuer, providerConfiguration(options, directory, Memory, errors));
  provider.on('server_error', (_ctx, err) => log(`sso-provider: server error: ${(err as Error).message}`));
  const interaction = interactionHandler(provider, directory, options.audience);
  const callback = provider.callback();
  const server = http.createServer((req, res) => {
    const { pathname } = new URL(req.url ?? '/', issuer);
    if (pathname === '/health') return send(res, 200, 'text/plain', 'ok\n');
    const uid = /^\/interaction\/([A-Za-z0-9_-]+)$/.exec(pathname)?.[1];
    if (uid === undefined) return callback(req, res);
    interaction(req, res, uid).catch((err: unknown) => {
      if (!(err instanceof StatusError)) log(`sso-provider: sign-in failed: ${(err as Error).message}`);
      const failed = new StatusError(500, 'The sign-in failed: start again from the app.');
      sendError(req, res, err instanceof StatusError ? err : failed, 'text');
    });
  });
  const { hostname, port } = new URL(issuer);
  return listen(server, Number(port || 80), hostname.replace(/^\[|\]$/g, ''));
}
