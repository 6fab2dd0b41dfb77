// test-lane: parallel
// The codec server (a process) with CODEC_SERVER_OIDC_ISSUER: the sign-on provider's access tokens as
// the Web UI passes them (codec.passAccessToken), checked against a provider stand-in on loopback that
// publishes a discovery document and a JWKS of keys made here (real RS256 signatures): a reader's token
// decodes; no token, an expired one, one signed by another key or for another audience is a 401; a
// good token without a role on the request's namespace is a 403 naming it; the token file's tokens
// keep working beside, for the namespaces the server serves; the provider may start after the codec server.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { type ChildProcess, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import { Agent, fetch as undiciFetch } from 'undici';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { generateKeyLine, payloadEncryption } from '../../src/codec';
import { freeLoopbackPort } from '../../src/observability/free-port';
import { DEFAULT_TOKEN_AUDIENCE, permissionsFor, type Role } from '../../src/shared/roles';
import {
  type JsonPayload,
  payloadFromJson,
  payloadToJson,
  runCodecServerToExit,
  startCodecServerProcess,
  startProviderStandIn,
} from '../helpers/codec-server';
import { waitFor } from '../helpers/temporal';

const UI_ORIGIN = 'http://127.0.0.1:8633';
const FILE_TOKEN = 'codec-sso-test-file-token-0123';
type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

describe('codec server with the sign-on provider (CODEC_SERVER_OIDC_ISSUER)', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'codec-sso-'));
  const keysFile = path.join(dir, 'keys');
  const tokenFile = path.join(dir, 'codec-token');
  let providerKey: KeyPair;
  let otherKey: KeyPair;
  let provider: Server | undefined;
  let issuer: string;
  let providerPort: number;
  let codecServer: ChildProcess;
  let url: string;
  let output: () => string;

  const token = async (
    claims: { roles?: Record<string, Role>; aud?: string; expiresIn?: number; sub?: string },
    key: KeyPair = providerKey,
  ) => {
    const now = Math.floor(Date.now() / 1000);
    return (
      new SignJWT({ permissions: permissionsFor(claims.roles ?? { default: 'reader' }) })
        // The same key id for the other key: its signature, not a missing key, is what fails.
        .setProtectedHeader({ alg: 'RS256', kid: 'provider' })
        .setIssuer(issuer)
        .setSubject(claims.sub ?? 'reader')
        .setAudience(claims.aud ?? DEFAULT_TOKEN_AUDIENCE)
        .setIssuedAt(now - 10)
        .setExpirationTime(now + (claims.expiresIn ?? 300))
        .sign(key.privateKey)
    );
  };

  const decode = (bearer: string | undefined, headers: Record<string, string> = {}, payloads: JsonPayload[] = []) =>
    fetch(`${url}/decode`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        ...(bearer === undefined ? {} : { Authorization: `Bearer ${bearer}` }),
        ...headers,
      },
      body: JSON.stringify({ payloads }),
    });

  before(async () => {
    providerKey = await generateKeyPair('RS256');
    otherKey = await generateKeyPair('RS256');
    providerPort = await freeLoopbackPort();
    issuer = `http://127.0.0.1:${providerPort}`;
    writeFileSync(keysFile, `${generateKeyLine()}\n`);
    writeFileSync(tokenFile, `${FILE_TOKEN}\n`);
    // The provider is not up yet: the codec server starts anyway and discovers it on first use.
    ({
      child: codecServer,
      url,
      output,
    } = await startCodecServerProcess([], {
      PAYLOAD_ENCRYPTION_KEYS_FILE: keysFile,
      CODEC_SERVER_CORS_ORIGINS: UI_ORIGIN,
      CODEC_SERVER_TOKEN_FILE: tokenFile,
      CODEC_SERVER_OIDC_ISSUER: issuer,
      // Two namespaces whose workers share these keys; a request without X-Namespace means the first.
      CODEC_SERVER_NAMESPACES: 'default,docs',
    }));
  });

  after(() => {
    codecServer?.kill('SIGTERM');
    provider?.close();
    provider?.closeAllConnections();
    rmSync(dir, { recursive: true, force: true });
  });

  test('before the provider is up a token gets 503; once it is, a reader decodes', async () => {
    const reader = await token({ roles: { default: 'reader' } });
    const early = await decode(reader);
    assert.equal(early.status, 503, await early.clone().text());
    await waitFor(() => /refused \(provider unreachable\): .*openid-configuration/.test(output()), {
      what: 'the unreachable provider in the log',
    });
    const jwk = { ...(await exportJWK(providerKey.publicKey)), kid: 'provider', alg: 'RS256', use: 'sig' };
    provider = await startProviderStandIn(providerPort, { keys: [jwk] });

    const { codec } = payloadEncryption(keysFile);
    const encrypted = await codec.encode([defaultPayloadConverter.toPayload({ prompt: 'sso-marker' })]);
    const res = await decode(reader, { 'X-Namespace': 'default' }, encrypted.map(payloadToJson));
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as { payloads: JsonPayload[] };
    assert.deepEqual(
      body.payloads.map((p) => defaultPayloadConverter.fromPayload(payloadFromJson(p))),
      [{ prompt: 'sso-marker' }],
    );
    // The temporal CLI sends no X-Namespace: the default namespace is meant.
    assert.equal((await decode(reader)).status, 200);
    // A cluster-wide admin has a role on every namespace (this server serves).
    assert.equal(
      (await decode(await token({ roles: { 'temporal-system': 'admin' } }), { 'X-Namespace': 'docs' })).status,
      200,
    );
  });

  test('no token, an expired one, one of another key or audience: 401, and the token is not echoed', async () => {
    const cases: [string, string | undefined][] = [
      ['no token', undefined],
      ['expired', await token({ expiresIn: -120 })],
      ['another key', await token({}, otherKey)],
      ['another audience', await token({ aud: 'urn:someone-else' })],
      ['not a JWT', 'not-a-jwt-and-not-in-the-file'],
      [
        "HS256 instead of the provider's RS256",
        await new SignJWT({ permissions: ['default:admin'] })
          .setProtectedHeader({ alg: 'HS256', kid: 'provider' })
          .setIssuer(issuer)
          .setAudience(DEFAULT_TOKEN_AUDIENCE)
          .setExpirationTime('5m')
          .sign(new Uint8Array(32).fill(7)),
      ],
    ];
    for (const [what, bearer] of cases) {
      const res = await decode(bearer);
      assert.equal(res.status, 401, what);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer', what);
      if (bearer !== undefined) assert.ok(!(await res.text()).includes(bearer), what);
    }
    for (const reason of ['expired token', 'bad signature', 'wrong audience', 'no token', 'unknown token'])
      await waitFor(() => output().includes(`refused (${reason})`), { what: `the "${reason}" line in the log` });
    for (const [, bearer] of cases) if (bearer) assert.ok(!output().includes(bearer), 'no token in the log');
  });

  test('a token of another issuer is a 401', async () => {
    const foreign = await new SignJWT({ permissions: ['default:admin'] })
      .setProtectedHeader({ alg: 'RS256', kid: 'provider' })
      .setIssuer('http://127.0.0.1:1')
      .setAudience(DEFAULT_TOKEN_AUDIENCE)
      .setExpirationTime('5m')
      .sign(providerKey.privateKey);
    assert.equal((await decode(foreign)).status, 401);
    await waitFor(() => output().includes('refused (wrong issuer)'), { what: 'the wrong-issuer line' });
  });

  test('a good token without a role on the namespace is a 403 that names the namespace', async () => {
    const reader = await token({ roles: { default: 'reader' } });
    const res = await decode(reader, { 'X-Namespace': 'docs' });
    assert.equal(res.status, 403);
    const { error } = (await res.json()) as { error: string };
    assert.equal(error, 'the access token gives no role on namespace docs');
    assert.equal((await decode(await token({ roles: { docs: 'reader' } }), { 'X-Namespace': 'docs' })).status, 200);
    const none = await decode(await token({ roles: {} }));
    assert.equal(none.status, 403);
    assert.match(((await none.json()) as { error: string }).error, /namespace default$/);
    assert.equal((await decode(reader, { 'X-Namespace': 'bad namespace\n' })).status, 400);
  });

  test('the token file keeps working beside the sign-on tokens, for the namespaces served', async () => {
    assert.equal((await decode(FILE_TOKEN)).status, 200);
    assert.equal((await decode(FILE_TOKEN, { 'X-Namespace': 'docs' })).status, 200);
    const other = await decode(FILE_TOKEN, { 'X-Namespace': 'payments' });
    assert.equal(other.status, 403);
    assert.deepEqual(await other.json(), { error: 'this codec server serves namespaces default, docs, not payments' });
    await waitFor(() => output().includes('refused (namespace not served): payments; from 127.0.0.1'), {
      what: 'the refusal in the log',
    });
  });

  test("the Web UI's preflight is answered with every header its browser code sends", async () => {
    const preflight = await fetch(`${url}/decode`, {
      method: 'OPTIONS',
      headers: {
        Origin: UI_ORIGIN,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization,authorization-extras,content-type,x-namespace',
      },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), UI_ORIGIN);
    const allowed = (preflight.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/,\s*/);
    for (const header of ['authorization', 'authorization-extras', 'content-type', 'x-namespace'])
      assert.ok(allowed.includes(header), header);
    const res = await decode(await token({}), { Origin: UI_ORIGIN, 'X-Namespace': 'default' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), UI_ORIGIN);
  });

  test('over HTTPS (the Web UI passes its token only to an https:// endpoint) a reader decodes', async () => {
    const cert = path.join(dir, 'cert.pem');
    const key = path.join(dir, 'key.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: 'ignore' },
    );
    const tlsEnv = {
      PAYLOAD_ENCRYPTION_KEYS_FILE: keysFile,
      CODEC_SERVER_OIDC_ISSUER: issuer,
      CODEC_SERVER_TLS_CERT_FILE: cert,
      CODEC_SERVER_TLS_KEY_FILE: key,
    };
    const secure = await startCodecServerProcess([], tlsEnv);
    const dispatcher = new Agent({ connect: { ca: readFileSync(cert) } });
    try {
      assert.match(secure.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      const res = await undiciFetch(`${secure.url}/decode`, {
        method: 'POST',
        dispatcher,
        headers: { Authorization: `Bearer ${await token({})}`, 'X-Namespace': 'default' },
        body: '{"payloads": []}',
      });
      assert.equal(res.status, 200, await res.text());
    } finally {
      secure.child.kill('SIGTERM');
      await dispatcher.close();
    }
    const half = await runCodecServerToExit(['--port', '0'], { ...tlsEnv, CODEC_SERVER_TLS_KEY_FILE: '' });
    assert.equal(half.code, 1);
    assert.equal(
      half.stderr,
      'codec-server: set both CODEC_SERVER_TLS_CERT_FILE and CODEC_SERVER_TLS_KEY_FILE, or neither\n',
    );
    const notPem = await runCodecServerToExit(['--port', '0'], { ...tlsEnv, CODEC_SERVER_TLS_CERT_FILE: keysFile });
    assert.equal(notPem.code, 1);
    assert.match(notPem.stderr, /^codec-server: CODEC_SERVER_TLS_CERT_FILE, CODEC_SERVER_TLS_KEY_FILE: [^\n]+\n$/);
  });
});
