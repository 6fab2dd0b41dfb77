// test-lane: parallel
// A service's token source against the sign-on provider as a process, with 3-second tokens: it refreshes
// before each expires, every token verifies with the provider's keys, a failed refresh is logged in one
// line without the secret and retried, and a closed source asks for nothing more. The client and the
// worker's connection take their token from it and stay plain gRPC when no TLS is set (a dev server).
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { connectClient, connectNative } from '../../src/connection';
import { ServiceTokenSource, serviceTokenSettingsFromEnv } from '../../src/connection/service-token';
import { DEFAULT_TOKEN_AUDIENCE } from '../../src/shared/roles';
import { waitFor } from '../../scripts/wait';
import { type SsoProviderProcess, startSsoProviderProcess } from '../helpers/sso';
import { createDevEnv } from '../helpers/temporal';

let sso: SsoProviderProcess;
before(async () => {
  sso = await startSsoProviderProcess(3);
});
after(() => sso.stop());

/** The service's settings with a copy of its secret (the provider reads the original). */
function settingsFor(clientId: string) {
  const copy = path.join(sso.folder, `${clientId}.client-copy`);
  copyFileSync(path.join(sso.folder, `${clientId}.secret`), copy);
  return serviceTokenSettingsFromEnv({
    TEMPORAL_OIDC_ISSUER: sso.issuer,
    TEMPORAL_OIDC_CLIENT_ID: clientId,
    TEMPORAL_OIDC_CLIENT_SECRET_FILE: copy,
  })!;
}

test('refreshes before each token expires; every token verifies', async () => {
  const jwks = createRemoteJWKSet(new URL(`${sso.issuer}/jwks`));
  const source = await ServiceTokenSource.start(settingsFor('docs-admin-worker'));
  const tokens = [source.current()];
  source.onRefresh((token) => tokens.push(token));
  try {
    await waitFor(() => tokens.length >= 3, { timeoutMs: 15_000, what: 'two refreshes' });
    for (const token of tokens) {
      // Each was current at its time: verified as of when it was issued (the first has expired by now).
      const { payload } = await jwtVerify(token, jwks, {
        issuer: sso.issuer,
        audience: DEFAULT_TOKEN_AUDIENCE,
        currentDate: new Date((decodeJwt(token).iat! + 1) * 1000),
      });
      assert.equal(payload.sub, 'docs-admin-worker');
      assert.deepEqual(payload.permissions, ['default:write']);
    }
    assert.equal(new Set(tokens).size, tokens.length);
    // The current token is always one that has not expired.
    await jwtVerify(source.current(), jwks, { issuer: sso.issuer, audience: DEFAULT_TOKEN_AUDIENCE });
  } finally {
    source.close();
  }
});

test('a failed refresh is logged in one line without the secret, and retried', async () => {
  const settings = settingsFor('docs-admin-cli');
  const secret = readFileSync(settings.clientSecretFile, 'utf8');
  const lines: string[] = [];
  const source = await ServiceTokenSource.start(settings, { log: (line) => lines.push(line) });
  let refreshed = 0;
  source.onRefresh(() => (refreshed += 1));
  try {
    writeFileSync(settings.clientSecretFile, 'a-wrong-secret-0123456789\n');
    await waitFor(() => lines.length >= 1, { timeoutMs: 10_000, what: 'a failed refresh' });
    assert.match(lines[0]!, /cannot refresh the token of docs-admin-cli .*HTTP 401: invalid_client.*retrying/);
    assert.ok(!lines.some((line) => line.includes(secret.trim()) || line.includes('a-wrong-secret')));
    writeFileSync(settings.clientSecretFile, secret);
    await waitFor(() => refreshed >= 1, { timeoutMs: 10_000, what: 'a refresh after the secret is back' });
  } finally {
    source.close();
  }
});

test('a wrong secret at the start throws one line; a closed source stops refreshing', async () => {
  const settings = settingsFor('docs-admin-setup');
  const secret = readFileSync(settings.clientSecretFile, 'utf8');
  writeFileSync(settings.clientSecretFile, 'a-wrong-secret-0123456789\n');
  await assert.rejects(
    ServiceTokenSource.start(settings),
    /cannot get a token for docs-admin-setup from .*HTTP 401: invalid_client$/,
  );
  writeFileSync(settings.clientSecretFile, secret);
  const closed = await ServiceTokenSource.start(settings);
  const open = await ServiceTokenSource.start(settings);
  const refreshes = { closed: 0, open: 0 };
  closed.onRefresh(() => (refreshes.closed += 1));
  open.onRefresh(() => (refreshes.open += 1));
  closed.close();
  try {
    // The same tokens' lifetimes pass for both: the open one's refreshes show the closed one had its chances.
    await waitFor(() => refreshes.open >= 2, { timeoutMs: 10_000, what: 'the open source to refresh twice' });
    assert.equal(refreshes.closed, 0);
  } finally {
    open.close();
  }
});

test('connectClient and connectNative connect plain with a service token; a refused service fails in one line', async () => {
  const dev = await createDevEnv();
  try {
    const settings = settingsFor('docs-admin-worker');
    const env = {
      TEMPORAL_ADDRESS: dev.address,
      TEMPORAL_OIDC_ISSUER: sso.issuer,
      TEMPORAL_OIDC_CLIENT_ID: settings.clientId,
      TEMPORAL_OIDC_CLIENT_SECRET_FILE: settings.clientSecretFile,
    };
    const client = await connectClient(env);
    await client.workflowService.getSystemInfo({});
    await client.connection.close();
    const native = await connectNative(env, dev.address);
    await native.workflowService.getSystemInfo({});
    await native.close();
    await assert.rejects(
      connectClient({ ...env, TEMPORAL_OIDC_CLIENT_ID: 'nobody' }),
      /cannot get a token for nobody from .*HTTP 401: invalid_client/,
    );
  } finally {
    await dev.teardown();
  }
});
