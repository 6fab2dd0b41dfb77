// test-lane: parallel
// `npm run sso-provider`'s settings from the environment (sso-provider/main.ts): defaults and one-line errors.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ssoProviderSettings } from '../../sso-provider/main';

const env = {
  SSO_ISSUER: 'http://127.0.0.1:8636/',
  SSO_DIRECTORY_FILE: '/d/directory.yaml',
  SSO_SIGNING_KEY_FILE: '/d/key.json',
};

test('the issuer as an origin, the default audience and token lifetime', () => {
  assert.deepEqual(ssoProviderSettings(env), {
    issuer: 'http://127.0.0.1:8636',
    directoryFile: '/d/directory.yaml',
    signingKeyFile: '/d/key.json',
    audience: 'urn:docs-admin:temporal',
    accessTokenTtlSeconds: 900,
    serviceTokenTtlSeconds: 900,
  });
  const set = ssoProviderSettings({ ...env, SSO_AUDIENCE: 'urn:x', SSO_ACCESS_TOKEN_TTL_SECONDS: '3' });
  assert.equal(set.audience, 'urn:x');
  assert.equal(set.accessTokenTtlSeconds, 3);
  assert.equal(set.serviceTokenTtlSeconds, 3, "services' tokens live as long as people's unless told");
  const services = ssoProviderSettings({ ...env, SSO_SERVICE_TOKEN_TTL_SECONDS: '20' });
  assert.deepEqual([services.accessTokenTtlSeconds, services.serviceTokenTtlSeconds], [900, 20]);
});

test('a missing or bad setting is one line naming the variable', () => {
  const refused = (over: Record<string, string | undefined>, pattern: RegExp) =>
    assert.throws(
      () => ssoProviderSettings({ ...env, ...over }),
      (err: Error) => pattern.test(err.message) && !err.message.includes('\n'),
    );
  refused({ SSO_ISSUER: undefined }, /^SSO_ISSUER is not set/);
  refused({ SSO_DIRECTORY_FILE: '' }, /^SSO_DIRECTORY_FILE is not set/);
  refused({ SSO_ISSUER: 'http://127.0.0.1:8636/sso' }, /SSO_ISSUER must be an http\(s\) origin with no path/);
  refused({ SSO_ISSUER: 'not a url' }, /SSO_ISSUER is not a URL/);
  for (const ttl of ['0', '1.5', 'ten', '86401'])
    refused({ SSO_ACCESS_TOKEN_TTL_SECONDS: ttl }, /SSO_ACCESS_TOKEN_TTL_SECONDS must be a whole number/);
});
