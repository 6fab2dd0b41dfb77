// test-lane: parallel
// The codec server as `npm run codec-server` runs it (a process), called with plain fetch as the Web
// UI and `temporal --codec-endpoint` call it: decode and encode, the browser's preflight, origins
// that are refused, the bearer tokens of CODEC_SERVER_TOKEN_FILE (and their rotation), --no-auth.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { generateKeyLine, payloadEncryption } from '../../src/codec';
import {
  type JsonPayload,
  payloadFromJson as fromJson,
  payloadToJson as toJson,
  runCodecServerToExit as runToExit,
  startCodecServerProcess as startServer,
} from '../helpers/codec-server';
import { waitFor } from '../helpers/temporal';

const UI_ORIGIN = 'http://127.0.0.1:8633';
const TOKEN = 'codec-test-token-0123456789';
const SECOND = 'codec-test-token-second-0123';

describe('codec server (npm run codec-server)', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'codec-server-'));
  const keysFile = path.join(dir, 'keys');
  const tokenFile = path.join(dir, 'codec-token');
  let server: ChildProcess;
  let url: string;
  let output: () => string;

  const post = (route: string, payloads: Payload[], headers: Record<string, string> = {}) =>
    fetch(`${url}${route}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKEN}`, ...headers },
      body: JSON.stringify({ payloads: payloads.map(toJson) }),
    });
  const decoded = async (res: Response): Promise<unknown[]> => {
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as { payloads: JsonPayload[] };
    return body.payloads.map((p) => {
      const payload = fromJson(p);
      return Buffer.from(payload.metadata?.encoding ?? []).toString() === 'binary/encrypted'
        ? 'still encrypted'
        : defaultPayloadConverter.fromPayload(payload);
    });
  };
  /** As a secret volume does: the new content appears at once. */
  const replaceTokens = (text: string) => {
    writeFileSync(`${tokenFile}.tmp`, text);
    renameSync(`${tokenFile}.tmp`, tokenFile);
  };

  before(async () => {
    writeFileSync(keysFile, `${generateKeyLine()}\n`);
    replaceTokens(`# the Web UI's and the CLI's\n${TOKEN}\n`);
    ({
      child: server,
      url,
      output,
    } = await startServer([], {
      PAYLOAD_ENCRYPTION_KEYS_FILE: keysFile,
      CODEC_SERVER_CORS_ORIGINS: `${UI_ORIGIN},http://localhost:8633`,
      CODEC_SERVER_TOKEN_FILE: tokenFile,
    }));
  });

  after(() => {
    server?.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });

  test('decodes what the workers and clients encrypt, and encodes', async () => {
    const { codec } = payloadEncryption(keysFile);
    const encrypted = await codec.encode([defaultPayloadConverter.toPayload({ prompt: 'marker-123' })]);
    const plain = defaultPayloadConverter.toPayload('plain from another caller');
    assert.deepEqual(await decoded(await post('/decode', [...encrypted, plain])), [
      { prompt: 'marker-123' },
      'plain from another caller',
    ]);
    const encodeRes = await post('/encode', [defaultPayloadConverter.toPayload('to encrypt')]);
    const body = (await encodeRes.json()) as { payloads: JsonPayload[] };
    const [reEncrypted] = body.payloads.map(fromJson);
    assert.equal(Buffer.from(reEncrypted?.metadata?.encoding ?? []).toString(), 'binary/encrypted');
    assert.deepEqual(
      await codec.decode([reEncrypted as Payload]).then((p) => p.map((x) => defaultPayloadConverter.fromPayload(x))),
      ['to encrypt'],
    );
  });

  test('a payload of an unknown key comes back as it came, and the server says why in one line', async () => {
    const otherFile = path.join(dir, 'other');
    writeFileSync(otherFile, `other-key ${Buffer.alloc(32, 7).toString('base64')}\n`);
    const foreign = await payloadEncryption(otherFile).codec.encode([defaultPayloadConverter.toPayload('x')]);
    assert.deepEqual(await decoded(await post('/decode', foreign)), ['still encrypted']);
    await waitFor(() => output().includes('payload encrypted with key "other-key", which is not in'), {
      what: 'the one-line reason in the server output',
    });
  });

  test("the Web UI's preflight and request from an allowed origin get CORS headers", async () => {
    const preflight = await fetch(`${url}/decode`, {
      method: 'OPTIONS',
      headers: {
        Origin: UI_ORIGIN,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type,x-namespace',
      },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), UI_ORIGIN);
    assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /X-Namespace/);
    assert.match(preflight.headers.get('access-control-allow-methods') ?? '', /POST/);
    const res = await post('/decode', [], { Origin: UI_ORIGIN, 'X-Namespace': 'default' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), UI_ORIGIN);
  });

  test('another origin is refused, preflight and request alike', async () => {
    const evil = 'http://evil.example.com';
    const preflight = await fetch(`${url}/decode`, {
      method: 'OPTIONS',
      headers: { Origin: evil, 'Access-Control-Request-Method': 'POST' },
    });
    assert.equal(preflight.status, 403);
    assert.equal(preflight.headers.get('access-control-allow-origin'), null);
    const res = await post('/decode', [], { Origin: evil });
    assert.equal(res.status, 403);
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });

  test('a request without the token, or with another, is refused', async () => {
    const { codec } = payloadEncryption(keysFile);
    const encrypted = await codec.encode([defaultPayloadConverter.toPayload('secret')]);
    for (const authorization of [undefined, 'Bearer wrong-token', `Bearer ${TOKEN}x`, `Basic ${TOKEN}`, 'Bearer ']) {
      const res = await fetch(`${url}/decode`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...(authorization ? { Authorization: authorization } : {}) },
        body: JSON.stringify({ payloads: encrypted.map(toJson) }),
      });
      assert.equal(res.status, 401, `Authorization: ${authorization}`);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer');
      assert.ok(!(await res.text()).includes('secret'));
    }
    const encode = await fetch(`${url}/encode`, { method: 'POST', body: JSON.stringify({ payloads: [] }) });
    assert.equal(encode.status, 401, '/encode too');
    assert.equal((await fetch(`${url}/health`)).status, 200, 'the health check needs no token');
  });

  test('tokens rotate through the file: a second line is accepted at once, a removed one refused', async () => {
    const status = async (token: string) => (await post('/decode', [], { Authorization: `Bearer ${token}` })).status;
    assert.equal(await status(SECOND), 401);
    replaceTokens(`${TOKEN}\n${SECOND}\n`);
    await waitFor(async () => (await status(SECOND)) === 200, { what: 'the added token to be accepted' });
    assert.equal(await status(TOKEN), 200, 'both lines are accepted while the callers move');
    replaceTokens(`${SECOND}\n`);
    await waitFor(async () => (await status(TOKEN)) === 401, { what: 'the removed token to be refused' });
    assert.equal(await status(SECOND), 200);
    // A broken change keeps the tokens read before and says so once, without a token in the line.
    replaceTokens('short\n');
    assert.equal(await status(SECOND), 200);
    await waitFor(() => output().includes('shorter than 16 characters; still using the tokens read before'), {
      what: 'the one-line problem',
    });
    assert.ok(!output().includes(SECOND));
    replaceTokens(`${TOKEN}\n`);
    await waitFor(async () => (await status(TOKEN)) === 200, { what: 'the original token back' });
  });

  test('an empty list sent as protobuf JSON leaves it out (`{}`, as the temporal CLI does) is an empty answer', async () => {
    const res = await fetch(`${url}/decode`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKEN}` },
      body: '{}',
    });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { payloads: [] });
  });

  test('bad requests get 4xx with a reason', async () => {
    const bad = await fetch(`${url}/decode`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKEN}` },
      body: '{',
    });
    assert.equal(bad.status, 400);
    for (const body of ['null', '[]', '{"payloads": {}}']) {
      const res = await fetch(`${url}/decode`, { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}` }, body });
      assert.equal(res.status, 400, body);
    }
    const wrongPath = await fetch(`${url}/other`, { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}` } });
    assert.equal(wrongPath.status, 404);
  });

  test('without PAYLOAD_ENCRYPTION_KEYS_FILE it does not start, with one line', async () => {
    const result = await runToExit(['--port', '0', '--no-auth'], {});
    assert.equal(result.code, 1);
    assert.equal(
      result.stderr,
      'codec-server: PAYLOAD_ENCRYPTION_KEYS_FILE is not set: the codec server needs the payload keys\n',
    );
  });

  test('without a token and without --no-auth it does not start, with one line', async () => {
    const result = await runToExit(['--port', '0'], { PAYLOAD_ENCRYPTION_KEYS_FILE: keysFile });
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /^codec-server: no token: set CODEC_SERVER_TOKEN_FILE .* or CODEC_SERVER_OIDC_ISSUER .*--no-auth[^\n]*\n$/,
    );
    const missing = await runToExit(['--port', '0'], {
      PAYLOAD_ENCRYPTION_KEYS_FILE: keysFile,
      CODEC_SERVER_TOKEN_FILE: path.join(dir, 'nope'),
    });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^codec-server: .*nope: cannot read the token file \(ENOENT\)\n$/);
    const both = await runToExit(['--port', '0', '--no-auth'], {
      PAYLOAD_ENCRYPTION_KEYS_FILE: keysFile,
      CODEC_SERVER_TOKEN_FILE: tokenFile,
    });
    assert.equal(both.code, 1);
    assert.match(both.stderr, /^codec-server: --no-auth and a token \(CODEC_SERVER_TOKEN_FILE\) are both given\n$/);
  });

  test('--no-auth serves without a token and warns that anyone can decode', async () => {
    const open = await startServer(['--no-auth'], { PAYLOAD_ENCRYPTION_KEYS_FILE: keysFile });
    try {
      await waitFor(() => open.output().includes('warning: --no-auth'), { what: 'the warning' });
      assert.match(
        open.output(),
        /codec-server: warning: --no-auth: anyone who reaches http:\/\/127\.0\.0\.1:\d+ can decode/,
      );
      const { codec } = payloadEncryption(keysFile);
      const encrypted = await codec.encode([defaultPayloadConverter.toPayload('open')]);
      const res = await fetch(`${open.url}/decode`, {
        method: 'POST',
        body: JSON.stringify({ payloads: encrypted.map(toJson) }),
      });
      assert.equal(res.status, 200);
    } finally {
      open.child.kill('SIGTERM');
    }
  });
});
