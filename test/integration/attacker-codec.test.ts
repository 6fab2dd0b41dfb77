// test-lane: parallel
// The codec server against a caller who holds a valid token and wants more than it gives: the codec
// server (a process, as `npm run codec-server` runs it) serves `default` only, with the keys of
// `default`'s workers, and accepts the sign-on provider's tokens (a stand-in on loopback with real RS256
// keys) and a token file. A role in another namespace, or a token of the file, naming that other
// namespace decodes nothing; a `permissions` entry named after an Object prototype property grants
// nothing; a 38-byte body that asks for a 60 MB buffer is a 400 at once; an oversized body or payload
// list is refused before anything is decoded. Each refusal is named in the answer.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import type { Server } from 'node:http';
import { request } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { generateKeyLine, payloadEncryption } from '../../src/codec';
import { freeLoopbackPort } from '../../src/observability/free-port';
import { DEFAULT_TOKEN_AUDIENCE } from '../../src/shared/roles';
import {
  type JsonPayload,
  payloadToJson,
  startCodecServerProcess,
  startProviderStandIn,
} from '../helpers/codec-server';

const MARKER = 'attacker-codec-marker-7f3a';
const FILE_TOKEN = 'attacker-codec-file-token-0123';
/** The codec server's body cap (src/codec/server.ts). */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

describe('codec server: an authenticated caller asking for more than its token gives', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'attacker-codec-'));
  const keysFile = path.join(dir, 'keys');
  let provider: Server;
  let codecServer: ChildProcess;
  let url: string;
  let issuer: string;
  let signingKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  /** `default`'s payload, encrypted with `default`'s keys (those the codec server holds). */
  let secret: JsonPayload[];

  const token = (permissions: string[]) =>
    new SignJWT({ permissions })
      .setProtectedHeader({ alg: 'RS256', kid: 'provider' })
      .setIssuer(issuer)
      .setSubject('attacker')
      .setAudience(DEFAULT_TOKEN_AUDIENCE)
      .setExpirationTime('5m')
      .sign(signingKey);

  const post = (bearer: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${url}/decode`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${bearer}`, ...headers },
      body,
    });
  const decode = (bearer: string, namespace?: string) =>
    post(bearer, JSON.stringify({ payloads: secret }), namespace === undefined ? {} : { 'X-Namespace': namespace });

  before(async () => {
    const keys = await generateKeyPair('RS256');
    signingKey = keys.privateKey;
    const port = await freeLoopbackPort();
    issuer = `http://127.0.0.1:${port}`;
    const jwk = { ...(await exportJWK(keys.publicKey)), kid: 'provider', alg: 'RS256', use: 'sig' };
    provider = await startProviderStandIn(port, { keys: [jwk] });
    writeFileSync(keysFile, `${generateKeyLine()}\n`);
    writeFileSync(path.join(dir, 'codec-token'), `${FILE_TOKEN}\n`);
    ({ child: codecServer, url } = await startCodecServerProcess([], {
      PAYLOAD_ENCRYPTION_KEYS_FILE: keysFile,
      CODEC_SERVER_TOKEN_FILE: path.join(dir, 'codec-token'),
      CODEC_SERVER_OIDC_ISSUER: issuer,
      TEMPORAL_NAMESPACE: 'default',
    }));
    const { codec } = payloadEncryption(keysFile);
    secret = (await codec.encode([defaultPayloadConverter.toPayload({ prompt: MARKER })])).map(payloadToJson);
    // The owner's reader decodes it: what follows is refused for what it asks, not for a broken setup.
    const owner = await decode(await token(['default:read']), 'default');
    assert.equal(owner.status, 200);
    assert.ok((await owner.text()).includes(Buffer.from(JSON.stringify({ prompt: MARKER })).toString('base64')));
  });

  after(() => {
    codecServer?.kill('SIGTERM');
    provider?.close();
    provider?.closeAllConnections();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A refusal: its status and reason, and nothing of the secret payload decoded. */
  const refused = async (res: Response, status: number, reason: RegExp) => {
    const text = await res.text();
    const body = JSON.parse(text) as { error?: string; payloads?: Partial<JsonPayload>[] };
    for (const p of body.payloads ?? [])
      assert.ok(
        !Buffer.from(p.data ?? '', 'base64')
          .toString()
          .includes(MARKER),
      );
    assert.equal(res.status, status, text.slice(0, 300));
    assert.match(body.error ?? '', reason);
  };

  test("a role in sandbox decodes nothing of default's, whichever namespace it names", async () => {
    const sandboxReader = await token(['sandbox:read']);
    await refused(await decode(sandboxReader, 'default'), 403, /no role on namespace default/);
    await refused(await decode(sandboxReader), 403, /no role on namespace default/);
    // The finding: it named its own namespace, and the one key set decrypted default's payload.
    await refused(await decode(sandboxReader, 'sandbox'), 403, /serves namespace default.*not sandbox/);
    // A cluster-wide role still reaches only the namespaces this server serves.
    await refused(await decode(await token(['temporal-system:admin']), 'sandbox'), 403, /not sandbox/);
  });

  test("a token of the file decodes only the served namespaces' payloads", async () => {
    await refused(await decode(FILE_TOKEN, 'sandbox'), 403, /serves namespace default.*not sandbox/);
    assert.equal((await decode(FILE_TOKEN, 'default')).status, 200);
  });

  test('a permissions entry named after an Object prototype property grants nothing', async () => {
    for (const entry of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'])
      await refused(await decode(await token([`default:${entry}`]), 'default'), 403, /no role on namespace default/);
  });

  test('a 38-byte body asking for a 60 MB buffer is a 400 at once', async () => {
    const reader = await token(['default:read']);
    const bodies = ['{"payloads":[{"data":{"length":6e7}}]}', '{"payloads":[{"metadata":{"k":{"length":6e7}}}]}'];
    for (const body of bodies) {
      // The best of three: the bound is the server's work, not a busy machine's scheduling.
      let best = Infinity;
      for (let i = 0; i < 3; i += 1) {
        const started = performance.now();
        const res = await post(reader, body, { 'X-Namespace': 'default' });
        await refused(res, 400, /payloads\.0\.(data|metadata\.k)/);
        best = Math.min(best, performance.now() - started);
      }
      assert.ok(best < 100, `${body} answered in ${best.toFixed(1)} ms`);
    }
  });

  test('payloads that are not base64 strings, or too many of them, are a 400 before any decoding', async () => {
    const reader = await token(['default:read']);
    const cases: [string, RegExp][] = [
      ['{"payloads":[{"data":"not base64!"}]}', /payloads\.0\.data/],
      ['{"payloads":[null]}', /payloads\.0/],
      ['{"payloads":[{"metadata":["a"]}]}', /payloads\.0\.metadata/],
      [JSON.stringify({ payloads: Array.from({ length: 1001 }, () => ({})) }), /payloads.*1000/],
    ];
    for (const [body, reason] of cases) await refused(await post(reader, body), 400, reason);
  });

  test('a body over the cap is a 413: announced by Content-Length, or streamed without one', async () => {
    const reader = await token(['default:read']);
    // Announced: refused from the headers, before a byte of the body is read.
    const announced = await rawPost(url, reader, { 'Content-Length': String(MAX_BODY_BYTES + 1) }, '{');
    assert.equal(announced.status, 413, announced.body);
    assert.match(announced.body, /over 16777216 bytes/);
    // Streamed (chunked): refused once the cap is passed; the connection is closed, not drained.
    const streamed = await rawPost(url, reader, { 'Transfer-Encoding': 'chunked' }, 'x'.repeat(MAX_BODY_BYTES + 1));
    assert.equal(streamed.status, 413, streamed.body);
  });
});

/** A POST with the headers given as they are (fetch sets Content-Length itself); the status and body. */
function rawPost(
  base: string,
  bearer: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    let answered = false;
    let failure: Error | undefined;
    const req = request(
      `${base}/decode`,
      {
        method: 'POST',
        headers: { Authorization: `Bearer ${bearer}`, 'Content-Type': 'application/json', ...headers },
      },
      (res) => {
        answered = true;
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      },
    );
    // The server may answer and close before it has read all we send (EPIPE, ECONNRESET): that is the
    // point, as long as the answer came.
    req.on('error', (err) => (failure = err));
    req.on('close', () => answered || reject(new Error(`no answer: ${failure?.message ?? 'closed'}`)));
    req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10 s')));
    req.end(body);
  });
}
