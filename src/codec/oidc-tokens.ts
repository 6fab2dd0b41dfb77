// The sign-on provider's access tokens at the codec server (CODEC_SERVER_OIDC_ISSUER): which JWTs it
// accepts, for which namespace (roles: shared/roles.ts): docs/security.md, "Codec server". The provider
// may start after the codec server, so discovery is retried until it works.
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from 'jose';
import { StatusError } from '../process/small-server';
import { PERMISSIONS_CLAIM, type Role, roleOn } from '../shared/roles';

export const OIDC_ISSUER_VAR = 'CODEC_SERVER_OIDC_ISSUER';
export const OIDC_AUDIENCE_VAR = 'CODEC_SERVER_OIDC_AUDIENCE';
/** The provider signs with RS256; ES256 is allowed for providers that use EC keys. Nothing else. */
const ALGORITHMS = ['RS256', 'ES256'];
/** Clocks of the provider and the codec server may differ a little (the Temporal server allows none). */
export const CLOCK_TOLERANCE_SECONDS = 5;
const DISCOVERY_TIMEOUT_MS = 5_000;

/** Why a request was refused: one class per cause, logged at most once a minute each. */
export type RefusalClass =
  | 'no token'
  | 'unknown token'
  | 'expired token'
  | 'bad signature'
  | 'invalid token'
  | 'wrong issuer'
  | 'wrong audience'
  | 'no role'
  | 'provider unreachable';

export class TokenRefused extends StatusError {
  /** 401 for a token that proves nothing, 403 for a good token without a role, 503 no provider. */
  declare readonly status: 401 | 403 | 503;
  constructor(
    readonly refusal: RefusalClass,
    status: 401 | 403 | 503,
    message: string,
    /** For the log only (the caller gets `message`): what went wrong with the provider. */
    readonly detail?: string,
  ) {
    super(status, message);
  }
}

export interface OidcSettings {
  issuer: string;
  audience: string;
}

export interface VerifiedToken {
  sub: string | undefined;
  permissions: unknown;
}

/** Whether a bearer value has the shape of a JWT (three base64url parts); others cannot be one. */
export const looksLikeJwt = (token: string): boolean => /^[\w-]+\.[\w-]+\.[\w-]*$/.test(token);

/** The refusal for an error of jwtVerify (never with the token or its claims' values in the message). */
export function refusalOf(err: unknown): TokenRefused {
  if (err instanceof errors.JWTExpired) return new TokenRefused('expired token', 401, 'the access token has expired');
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'iss') return new TokenRefused('wrong issuer', 401, 'the access token is of another issuer');
    if (err.claim === 'aud') return new TokenRefused('wrong audience', 401, 'the access token is for another audience');
    return new TokenRefused('invalid token', 401, `the access token's "${err.claim}" claim is not valid`);
  }
  // The provider's side failed (discovery, the key set's fetch): the token may be fine, so no 401.
  const providerFailed =
    err instanceof DiscoveryError ||
    err instanceof errors.JWKSTimeout ||
    err instanceof errors.JWKSInvalid ||
    !(err instanceof errors.JOSEError);
  if (providerFailed)
    return new TokenRefused(
      'provider unreachable',
      503,
      'the sign-on provider cannot be reached; try again',
      String((err as Error)?.message ?? err),
    );
  const unsigned =
    err instanceof errors.JWSSignatureVerificationFailed ||
    err instanceof errors.JWKSNoMatchingKey ||
    err instanceof errors.JOSEAlgNotAllowed;
  if (unsigned) return new TokenRefused('bad signature', 401, 'the access token is not signed by the sign-on provider');
  return new TokenRefused('invalid token', 401, 'the access token is not a valid JWT');
}

class DiscoveryError extends Error {}

/** The issuer's jwks_uri, from its discovery document (which must name the same issuer). */
async function discoverJwksUri(issuer: string): Promise<URL> {
  const url = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
  let doc: { issuer?: unknown; jwks_uri?: unknown };
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(DISCOVERY_TIMEOUT_MS) });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    doc = (await res.json()) as typeof doc;
  } catch (err) {
    throw new DiscoveryError(`cannot read ${url}: ${(err as Error).message}`);
  }
  if (doc.issuer !== issuer) throw new DiscoveryError(`${url} names the issuer ${String(doc.issuer)}, not ${issuer}`);
  if (typeof doc.jwks_uri !== 'string') throw new DiscoveryError(`${url} has no jwks_uri`);
  return new URL(doc.jwks_uri);
}

/**
 * A verifier of the issuer's access tokens. Discovery happens on the first token, and again after a
 * failure (the provider was not up yet); the key set refetches itself when a token names an unknown key.
 */
export function oidcVerifier(settings: OidcSettings) {
  let keys: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined;
  const keySet = () => {
    keys ??= discoverJwksUri(settings.issuer).then(
      (uri) => createRemoteJWKSet(uri),
      (err: unknown) => {
        keys = undefined; // the next token tries again (the refusal log says why, once a minute)
        throw err;
      },
    );
    return keys;
  };
  return async (token: string): Promise<VerifiedToken> => {
    let payload: JWTPayload;
    try {
      payload = (
        await jwtVerify(token, await keySet(), {
          issuer: settings.issuer,
          audience: settings.audience,
          algorithms: ALGORITHMS,
          clockTolerance: CLOCK_TOLERANCE_SECONDS,
          requiredClaims: ['exp'],
        })
      ).payload;
    } catch (err) {
      throw refusalOf(err);
    }
    return { sub: payload.sub, permissions: payload[PERMISSIONS_CLAIM] };
  };
}

/** The role a verified token gives on `namespace`, or the 403 that names the namespace. */
export function requireRoleOn(token: VerifiedToken, namespace: string): Role {
  const role = roleOn(token.permissions, namespace);
  if (role === undefined)
    throw new TokenRefused('no role', 403, `the access token gives no role on namespace ${namespace}`);
  return role;
}
