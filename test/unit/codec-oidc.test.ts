// test-lane: parallel
// The codec server's sign-on settings (codecServerSettings), the refusal classes of jose's errors, the
// role check on a namespace and the once-a-minute refusal log.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { errors } from 'jose';
import { codecServerSettings } from '../../src/codec-server';
import { looksLikeJwt, refusalOf, requireRoleOn, TokenRefused } from '../../src/codec/oidc-tokens';
import { refusalLogger } from '../../src/codec/refusal-log';
import { DEFAULT_TOKEN_AUDIENCE } from '../../src/shared/roles';

const KEYS = { PAYLOAD_ENCRYPTION_KEYS_FILE: '/keys' };
const ISSUER = 'http://127.0.0.1:8636';

describe('codec server sign-on settings', () => {
  test('an issuer alone is enough; the audience and the namespace have defaults', () => {
    const settings = codecServerSettings([], { ...KEYS, CODEC_SERVER_OIDC_ISSUER: ISSUER });
    assert.deepEqual(settings.oidc, { issuer: ISSUER, audience: DEFAULT_TOKEN_AUDIENCE });
    assert.equal(settings.tokenSource, 'none');
    assert.equal(settings.defaultNamespace, 'default');
    const custom = codecServerSettings([], {
      ...KEYS,
      CODEC_SERVER_OIDC_ISSUER: ISSUER,
      CODEC_SERVER_OIDC_AUDIENCE: 'urn:other',
      CODEC_SERVER_TOKEN_FILE: '/tokens',
      TEMPORAL_NAMESPACE: 'docs',
    });
    assert.deepEqual(custom.oidc, { issuer: ISSUER, audience: 'urn:other' });
    assert.deepEqual(custom.tokenSource, { file: '/tokens' });
    assert.equal(custom.defaultNamespace, 'docs');
  });

  test('a bad issuer, --no-auth with an issuer, or nothing at all: one line', () => {
    assert.throws(() => codecServerSettings([], { ...KEYS, CODEC_SERVER_OIDC_ISSUER: 'nope' }), /is not a URL/);
    assert.throws(
      () => codecServerSettings([], { ...KEYS, CODEC_SERVER_OIDC_ISSUER: 'ftp://x' }),
      /is not an http\(s\) URL/,
    );
    assert.throws(
      () => codecServerSettings(['--no-auth'], { ...KEYS, CODEC_SERVER_OIDC_ISSUER: ISSUER }),
      /--no-auth and CODEC_SERVER_OIDC_ISSUER are both given/,
    );
    assert.throws(() => codecServerSettings([], KEYS), /CODEC_SERVER_TOKEN_FILE .* or CODEC_SERVER_OIDC_ISSUER/);
  });
});

describe('codec server namespaces (CODEC_SERVER_NAMESPACES)', () => {
  const settings = (env: NodeJS.ProcessEnv) => {
    const { namespaces, defaultNamespace } = codecServerSettings([], {
      ...KEYS,
      CODEC_SERVER_TOKEN: 't'.repeat(16),
      ...env,
    });
    return { namespaces, defaultNamespace };
  };

  test("unset: the one namespace of TEMPORAL_NAMESPACE, else `default`: the workers' own", () => {
    assert.deepEqual(settings({}), { namespaces: ['default'], defaultNamespace: 'default' });
    assert.deepEqual(settings({ TEMPORAL_NAMESPACE: 'docs' }), { namespaces: ['docs'], defaultNamespace: 'docs' });
  });

  test('a list: each served once; a request without X-Namespace means TEMPORAL_NAMESPACE, else the first', () => {
    assert.deepEqual(settings({ CODEC_SERVER_NAMESPACES: ' docs, default ,docs,' }), {
      namespaces: ['docs', 'default'],
      defaultNamespace: 'docs',
    });
    assert.deepEqual(settings({ CODEC_SERVER_NAMESPACES: 'docs,default', TEMPORAL_NAMESPACE: 'default' }), {
      namespaces: ['docs', 'default'],
      defaultNamespace: 'default',
    });
  });

  test('a name that is no namespace, or a TEMPORAL_NAMESPACE not served: one line', () => {
    assert.throws(
      () => settings({ CODEC_SERVER_NAMESPACES: 'default,bad name' }),
      /^Error: CODEC_SERVER_NAMESPACES: "bad name" is not a namespace name$/,
    );
    assert.throws(() => settings({ TEMPORAL_NAMESPACE: 'a/b' }), /^Error: TEMPORAL_NAMESPACE: "a\/b" is not/);
    assert.throws(
      () => settings({ CODEC_SERVER_NAMESPACES: 'docs', TEMPORAL_NAMESPACE: 'default' }),
      /^Error: TEMPORAL_NAMESPACE \(default\) is not one of CODEC_SERVER_NAMESPACES \(docs\): /,
    );
  });
});

describe('access token checks', () => {
  test("jose's errors become refusal classes with their status", () => {
    const expired = refusalOf(new errors.JWTExpired('x', {}, 'exp', 'check_failed'));
    assert.deepEqual([expired.refusal, expired.status], ['expired token', 401]);
    const iss = refusalOf(new errors.JWTClaimValidationFailed('x', {}, 'iss', 'check_failed'));
    assert.deepEqual([iss.refusal, iss.status], ['wrong issuer', 401]);
    const aud = refusalOf(new errors.JWTClaimValidationFailed('x', {}, 'aud', 'check_failed'));
    assert.deepEqual([aud.refusal, aud.status], ['wrong audience', 401]);
    const signature = refusalOf(new errors.JWSSignatureVerificationFailed());
    assert.deepEqual([signature.refusal, signature.status], ['bad signature', 401]);
    const alg = refusalOf(new errors.JOSEAlgNotAllowed('"alg" (Algorithm) Header Parameter value not allowed'));
    assert.deepEqual([alg.refusal, alg.status], ['bad signature', 401]);
    const nbf = refusalOf(new errors.JWTClaimValidationFailed('x', {}, 'nbf', 'check_failed'));
    assert.deepEqual([nbf.refusal, nbf.status], ['invalid token', 401]);
    const malformed = refusalOf(new errors.JWTInvalid('JWTs must have three components'));
    assert.deepEqual([malformed.refusal, malformed.status], ['invalid token', 401]);
    const timeout = refusalOf(new errors.JWKSTimeout());
    assert.deepEqual([timeout.refusal, timeout.status], ['provider unreachable', 503]);
    // The key set's fetch failing (the provider went away after discovery) is no fault of the token.
    const down = refusalOf(new TypeError('fetch failed'));
    assert.deepEqual([down.refusal, down.status, down.detail], ['provider unreachable', 503, 'fetch failed']);
  });

  test('a role on the namespace passes, none is a 403 naming the namespace', () => {
    assert.equal(requireRoleOn({ sub: 'r', permissions: ['default:read'] }, 'default'), 'reader');
    assert.equal(requireRoleOn({ sub: 'a', permissions: ['temporal-system:admin'] }, 'docs'), 'admin');
    assert.throws(
      () => requireRoleOn({ sub: 'r', permissions: ['default:read'] }, 'docs'),
      (err: unknown) =>
        err instanceof TokenRefused && err.status === 403 && err.message.endsWith('no role on namespace docs'),
    );
    assert.throws(() => requireRoleOn({ sub: 'r', permissions: undefined }, 'default'), TokenRefused);
  });

  test('only three base64url parts look like a JWT', () => {
    assert.ok(looksLikeJwt('eyJh.eyJz.c2ln'));
    for (const token of ['codec-test-token-0123456789', 'a.b', 'a.b.c.d', 'a.b+c.d'])
      assert.equal(looksLikeJwt(token), false, token);
  });
});

describe('refusal log', () => {
  test('one line per class a minute, with the count of those left out', () => {
    const lines: string[] = [];
    let now = 0;
    const log = refusalLogger(
      (line) => lines.push(line),
      () => now,
    );
    log('expired token', 'the access token has expired');
    log('expired token', 'the access token has expired');
    log('no role', 'no role on namespace docs');
    now = 59_999;
    log('expired token', 'the access token has expired');
    now = 60_000;
    log('expired token', 'the access token has expired');
    assert.deepEqual(lines, [
      'codec-server: refused (expired token): the access token has expired',
      'codec-server: refused (no role): no role on namespace docs',
      'codec-server: refused (expired token): the access token has expired (2 more since the last line)',
    ]);
  });
});
