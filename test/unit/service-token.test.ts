// test-lane: parallel
// A service's token settings (TEMPORAL_OIDC_*) and when its token is refreshed (src/connection/service-token.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { refreshDelayMs, serviceTokenSettingsFromEnv } from '../../src/connection/service-token';

const dir = mkdtempSync(path.join(os.tmpdir(), 'service-token-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const secretFile = path.join(dir, 'worker.secret');
writeFileSync(secretFile, 'a-client-secret-0123456789\n');
const full = {
  TEMPORAL_OIDC_ISSUER: 'http://127.0.0.1:8636/',
  TEMPORAL_OIDC_CLIENT_ID: 'docs-admin-worker',
  TEMPORAL_OIDC_CLIENT_SECRET_FILE: secretFile,
};

describe('serviceTokenSettingsFromEnv', () => {
  test('none without the variables; all of them with the default audience', () => {
    assert.equal(serviceTokenSettingsFromEnv({}), undefined);
    assert.deepEqual(serviceTokenSettingsFromEnv(full), {
      issuer: 'http://127.0.0.1:8636',
      clientId: 'docs-admin-worker',
      clientSecretFile: secretFile,
      audience: 'urn:docs-admin:temporal',
    });
    assert.equal(serviceTokenSettingsFromEnv({ ...full, TEMPORAL_OIDC_AUDIENCE: 'urn:x' })?.audience, 'urn:x');
  });

  test('partial settings, a bad issuer, an API key beside them and a bad secret file: one line each', () => {
    const line = (env: NodeJS.ProcessEnv, pattern: RegExp) =>
      assert.throws(
        () => serviceTokenSettingsFromEnv(env),
        (err: Error) => pattern.test(err.message) && !err.message.includes('\n'),
      );
    line(
      { TEMPORAL_OIDC_CLIENT_ID: 'w' },
      /TEMPORAL_OIDC_CLIENT_ID set without TEMPORAL_OIDC_ISSUER and TEMPORAL_OIDC_CLIENT_SECRET_FILE/,
    );
    line({ ...full, TEMPORAL_OIDC_ISSUER: 'ftp://x' }, /TEMPORAL_OIDC_ISSUER is not an http\(s\) URL/);
    line({ ...full, TEMPORAL_API_KEY: 'k' }, /not both/);
    line({ ...full, TEMPORAL_OIDC_CLIENT_SECRET_FILE: path.join(dir, 'none') }, /cannot read .*none \(ENOENT\)/);
    const empty = path.join(dir, 'empty.secret');
    writeFileSync(empty, '\n');
    line({ ...full, TEMPORAL_OIDC_CLIENT_SECRET_FILE: empty }, /is empty/);
  });
});

describe('refreshDelayMs', () => {
  const token = { obtainedAtMs: 0, expiresAtMs: 900_000 };
  test('refreshes at 3/4 of the lifetime, at once when that is past', () => {
    assert.equal(refreshDelayMs(token, 0, 0), 675_000);
    assert.equal(refreshDelayMs(token, 600_000, 0), 75_000);
    assert.equal(refreshDelayMs(token, 700_000, 0), 0);
    assert.equal(refreshDelayMs({ obtainedAtMs: 0, expiresAtMs: 3_000 }, 0, 0), 2_250);
  });

  test('retries 1 s doubling up to 30 s, sooner than the current token expires', () => {
    assert.deepEqual(
      [1, 2, 3, 5, 6, 9].map((failures) => refreshDelayMs(token, 675_000, failures)),
      [1_000, 2_000, 4_000, 16_000, 30_000, 30_000],
    );
    assert.equal(refreshDelayMs(token, 880_000, 6), 15_000);
    assert.equal(refreshDelayMs(token, 899_500, 6), 1_000);
    assert.equal(refreshDelayMs(token, 950_000, 6), 30_000);
  });
});
