// test-lane: parallel
// The payload codec (AES-256-GCM in the format of Temporal's encryption samples) and its key file.
import assert from 'node:assert/strict';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { failureConverter } from '../../src/codec/failure-converter';
import {
  EncryptionCodec,
  KeyFile,
  KeyFileError,
  PayloadKeyError,
  addKey,
  dropKey,
  generateKeyLine,
  isPublicPayloadContext,
  parseKeyFile,
  promoteKey,
  payloadEncryption,
  type KeyRing,
} from '../../src/codec';
import { rateLimiterWorkflowId } from '../../src/shared/rate-limiter';

const dir = mkdtempSync(path.join(os.tmpdir(), 'payload-codec-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const key32 = () => randomBytes(32);
const line = (id: string, key: Buffer) => `${id} ${key.toString('base64')}`;
const ring = (...keys: [string, Buffer][]): KeyRing =>
  parseKeyFile(keys.map(([id, k]) => line(id, k)).join('\n'), 'keys');
const codecOf = (keys: () => KeyRing) => new EncryptionCodec({ keys, source: 'PAYLOAD_ENCRYPTION_KEYS_FILE (keys)' });
const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('utf8');
const json = (value: unknown): Payload => defaultPayloadConverter.toPayload(value);

/** protobuf of temporal.api.common.v1.Payload written by hand: map<string, bytes> metadata = 1; bytes data = 2. */
function protoPayload(metadata: Record<string, string>, data: Buffer): Buffer {
  const field = (tag: number, bytes: Buffer) => Buffer.concat([Buffer.from([tag, bytes.length]), bytes]);
  const entries = Object.entries(metadata).map(([k, v]) =>
    field(0x0a, Buffer.concat([field(0x0a, Buffer.from(k)), field(0x12, Buffer.from(v))])),
  );
  return Buffer.concat([...entries, field(0x12, data)]);
}

describe('key file', () => {
  test('the first line encrypts, every line decrypts; comments and blank lines are ignored', () => {
    const [a, b] = [key32(), key32()];
    const parsed = parseKeyFile(`# rotated 2026-11\n${line('new', a)}\n\n${line('old', b)}\n`, 'f');
    assert.equal(parsed.current.id, 'new');
    assert.deepEqual(parsed.current.key, a);
    assert.deepEqual([...parsed.byId.keys()], ['new', 'old']);
  });

  test('a bad file is one clear error naming the file and line, never the key', () => {
    const good = line('k1', key32());
    const cases: [string, RegExp][] = [
      ['', /^keys\.txt: no key in the file/],
      ['# only a comment\n', /no key in the file/],
      [`${good}\nk2 not*base64`, /^keys\.txt line 2: the key of "k2" is not valid base64/],
      [`k1 ${randomBytes(16).toString('base64')}`, /^keys\.txt line 1: the key of "k1" is 16 bytes, expected 32/],
      [`${good}\n${good}`, /^keys\.txt line 2: key id "k1" is listed twice/],
      ['k1', /^keys\.txt line 1: expected "<keyId> <base64 of 32 bytes> \[decrypt-only\]"/],
      [`${good} decrypt_only`, /line 1: expected/],
      [`k1 ${key32().toString('base64')} decrypt-only`, /^keys\.txt: every key is decrypt-only: promote one/],
      [`${good} extra`, /line 1: expected/],
      [`bad/id ${key32().toString('base64')}`, /line 1: the key id must be/],
    ];
    for (const [content, expected] of cases) {
      assert.throws(
        () => parseKeyFile(content, 'keys.txt'),
        (err: Error) => {
          assert.ok(err instanceof KeyFileError);
          assert.match(err.message, expected);
          assert.ok(!err.message.includes(good.split(' ')[1] as string), 'no key in the message');
          return true;
        },
      );
    }
  });

  test("today's files mean what they meant; a decrypt-only line decrypts and never encrypts", () => {
    const [a, b, c] = [key32(), key32(), key32()];
    const today = parseKeyFile(`${line('k2', a)}\n${line('k1', b)}\n`, 'f');
    assert.equal(today.current.id, 'k2');
    assert.deepEqual([...today.decryptOnly], []);
    const staged = parseKeyFile(`${line('k3', c)} decrypt-only\n${line('k2', a)}\n${line('k1', b)}\n`, 'f');
    assert.equal(staged.current.id, 'k2', 'the first line without the marker encrypts');
    assert.deepEqual([...staged.byId.keys()], ['k3', 'k2', 'k1']);
    assert.deepEqual([...staged.decryptOnly], ['k3']);
  });

  test('the staged rotation edits: add decrypt-only, promote, drop; comments and other lines kept', () => {
    const [k1, k2] = [line('k1', key32()), line('k2', key32())];
    const first = addKey('', k1, 'f');
    assert.equal(first, `${k1}\n`, 'the first key of a new file encrypts');
    const withComment = `# payload keys\n${first}`;
    const added = addKey(withComment, k2, 'f');
    assert.equal(added, `# payload keys\n${k1}\n${k2} decrypt-only\n`);
    assert.equal(parseKeyFile(added, 'f').current.id, 'k1', 'adding changes no encryption');
    const promoted = promoteKey(added, 'k2', 'f');
    assert.equal(promoted, `# payload keys\n${k2}\n${k1}\n`);
    assert.equal(parseKeyFile(promoted, 'f').current.id, 'k2');
    assert.throws(() => dropKey(promoted, 'k2', 'f'), /: f: "k2" is the encrypting key: promote another key/);
    assert.equal(dropKey(promoted, 'k1', 'f'), `# payload keys\n${k2}\n`);
    assert.throws(() => promoteKey(promoted, 'k9', 'f'), /f: no key "k9" in the file/);
    assert.throws(() => addKey(promoted, k2, 'f'), /key id "k2" is listed twice/);
    // A decrypt-only line below the encrypting one is promoted above it.
    const below = `${k1}\n${k2} decrypt-only\n`;
    assert.equal(promoteKey(below, 'k2', 'f'), `${k2}\n${k1}\n`);
  });

  test('keygen lines are unique and parse as a key file', () => {
    const [a, b] = [generateKeyLine(), generateKeyLine()];
    assert.notEqual(a, b);
    const parsed = parseKeyFile(`${a}\n${b}`, 'f');
    assert.equal(parsed.current.key.length, 32);
    assert.match(a, /^k\d{8}-[0-9a-f]{8} [A-Za-z0-9+/]{43}=$/);
  });

  test('the file is read again when it changes; a broken change keeps the keys read before', () => {
    const file = path.join(dir, 'rotating');
    const [k1, k2] = [key32(), key32()];
    writeFileSync(file, `${line('k1', k1)}\n`);
    const problems: string[] = [];
    const keyFile = new KeyFile(file, (m) => problems.push(m));
    assert.equal(keyFile.keys().current.id, 'k1');
    writeFileSync(file, `${line('k2', k2)}\n${line('k1', k1)}\n`);
    assert.equal(keyFile.keys().current.id, 'k2');
    assert.ok(keyFile.keys().byId.has('k1'));
    writeFileSync(file, `${line('k2', k2)}\nk3 half-writ`);
    assert.equal(keyFile.keys().current.id, 'k2');
    keyFile.keys();
    assert.equal(problems.length, 1, 'reported once');
    assert.match(problems[0] as string, /rotating line 2: .*; still using the keys read before/);
    writeFileSync(file, `${line('k3', k1)}\n`);
    assert.equal(keyFile.keys().current.id, 'k3');
  });

  test('a missing file fails at start naming it', () => {
    assert.throws(() => new KeyFile(path.join(dir, 'nope')), /nope: cannot read the payload key file \(ENOENT\)/);
  });
});

describe('EncryptionCodec', () => {
  const k1 = key32();
  const codec = codecOf(() => ring(['k1', k1]));

  test('round trip: encrypted with the metadata of the samples, decoded back to the same payload', async () => {
    const original = json({ prompt: 'secret marker', n: 1 });
    const [encoded] = await codec.encode([original]);
    assert.ok(encoded);
    assert.equal(text(encoded.metadata?.encoding), 'binary/encrypted');
    assert.equal(text(encoded.metadata?.['encryption-key-id']), 'k1');
    assert.deepEqual(Object.keys(encoded.metadata ?? {}).sort(), ['encoding', 'encryption-key-id']);
    assert.ok(!Buffer.from(encoded.data ?? []).includes('secret marker'));
    const [decoded] = await codec.decode([encoded]);
    assert.deepEqual(defaultPayloadConverter.fromPayload(decoded as Payload), { prompt: 'secret marker', n: 1 });
    assert.equal(text(decoded?.metadata?.encoding), 'json/plain');
  });

  test('a fresh 12-byte nonce for every payload', async () => {
    const encoded = await codec.encode([json('same'), json('same'), json('same')]);
    const ivs = new Set(
      encoded.map((p) =>
        Buffer.from(p.data ?? [])
          .subarray(0, 12)
          .toString('hex'),
      ),
    );
    assert.equal(ivs.size, 3);
  });

  test('payloads not marked binary/encrypted pass through (plain JSON from callers without the codec)', async () => {
    const plain = json({ projectId: 'p' });
    assert.deepEqual(await codec.decode([plain]), [plain]);
  });

  test('an unknown key id is one line naming the id and the file', async () => {
    const [other] = await codecOf(() => ring(['k9', key32()])).encode([json('x')]);
    await assert.rejects(codec.decode([other as Payload]), (err: Error) => {
      assert.ok(err instanceof PayloadKeyError);
      assert.equal(
        err.message,
        'payload encrypted with key "k9", which is not in PAYLOAD_ENCRYPTION_KEYS_FILE (keys): add that key\'s line to the file',
      );
      return true;
    });
  });

  test('a key id with the wrong key fails clearly, without the ciphertext', async () => {
    const [forged] = await codecOf(() => ring(['k1', key32()])).encode([json('x')]);
    await assert.rejects(codec.decode([forged as Payload]), (err: Error) => {
      assert.ok(err instanceof PayloadKeyError);
      assert.match(err.message, /^payload encrypted with key "k1" does not decrypt with the key of that id in /);
      assert.ok(
        !err.message.includes(
          Buffer.from(forged?.data ?? [])
            .toString('base64')
            .slice(0, 16),
        ),
      );
      return true;
    });
  });

  test('rotation: new payloads use the new first key; old payloads still decode', async () => {
    const k2 = key32();
    let keys = ring(['k1', k1]);
    const rotating = codecOf(() => keys);
    const [before] = await rotating.encode([json('before')]);
    keys = ring(['k2', k2], ['k1', k1]);
    const [afterRotation] = await rotating.encode([json('after')]);
    assert.equal(text(afterRotation?.metadata?.['encryption-key-id']), 'k2');
    const decoded = await rotating.decode([before as Payload, afterRotation as Payload]);
    assert.deepEqual(
      decoded.map((p) => defaultPayloadConverter.fromPayload(p)),
      ['before', 'after'],
    );
  });
});

describe('public payloads: the project rate limiters', () => {
  const file = path.join(dir, 'public-keys');
  writeFileSync(file, `${line('k1', key32())}\n`);
  const encryption = payloadEncryption(file);
  const [jobsCodec] = encryption.dataConverter.payloadCodecs ?? [];
  const [limiterCodec] = encryption.limiterDataConverter.payloadCodecs ?? [];
  const workflow = (workflowId: string) => ({ type: 'workflow' as const, namespace: 'default', workflowId });
  const encodingOf = async (codec: typeof jobsCodec, context?: Parameters<EncryptionCodec['encode']>[1]) =>
    text((await codec!.encode([json({ requestKey: 'r' })], context))[0]?.metadata?.encoding);

  test('only a limiter workflow owns public payloads', () => {
    assert.ok(isPublicPayloadContext(workflow(rateLimiterWorkflowId('P'))));
    assert.ok(!isPublicPayloadContext(workflow('agent-job:P:1')));
    assert.ok(!isPublicPayloadContext(workflow('x-agent-rate-limiter:P')));
    assert.ok(
      !isPublicPayloadContext({
        type: 'activity',
        namespace: 'default',
        workflowId: 'agent-rate-limiter:P',
        isLocal: true,
      }),
    );
    assert.ok(!isPublicPayloadContext(undefined));
  });

  test("the fleet's codec leaves what is sent to a limiter plain and encrypts the rest", async () => {
    assert.equal(await encodingOf(jobsCodec, workflow(rateLimiterWorkflowId('P'))), 'json/plain');
    assert.equal(await encodingOf(jobsCodec, workflow('agent-job:P:1')), 'binary/encrypted');
    assert.equal(await encodingOf(jobsCodec), 'binary/encrypted');
  });

  test("the limiter worker's codec writes everything plain (grant signals to jobs, failures) and still decrypts", async () => {
    assert.equal(await encodingOf(limiterCodec, workflow('agent-job:P:1')), 'json/plain');
    assert.equal(await encodingOf(limiterCodec), 'json/plain');
    const encrypted = await jobsCodec!.encode([json('carried before')]);
    const decoded = await limiterCodec!.decode(encrypted);
    assert.equal(defaultPayloadConverter.fromPayload(decoded[0] as Payload), 'carried before');
  });

  test('a payload under a key the file lacks is reported to the listeners (the worker counts it)', async () => {
    const reasons: string[] = [];
    const stop = encryption.onKeyError((err) => reasons.push(err.name));
    const [other] = await codecOf(() => ring(['k9', key32()])).encode([json('x')]);
    await assert.rejects(limiterCodec!.decode([other as Payload]), PayloadKeyError);
    stop();
    await assert.rejects(limiterCodec!.decode([other as Payload]), PayloadKeyError);
    assert.deepEqual(reasons, ['PayloadKeyError']);
  });
});

describe("compatibility with Temporal's encryption samples (known answer, built by hand)", () => {
  const key = key32();
  const codec = codecOf(() => ring(['sample-key', key]));

  test('decodes a payload encrypted as the samples do: IV, ciphertext, tag; plaintext a protobuf Payload', async () => {
    const inner = protoPayload({ encoding: 'json/plain' }, Buffer.from('{"prompt":"from python"}'));
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    const data = Buffer.concat([iv, cipher.update(inner), cipher.final(), cipher.getAuthTag()]);
    const foreign: Payload = {
      metadata: { encoding: Buffer.from('binary/encrypted'), 'encryption-key-id': Buffer.from('sample-key') },
      data,
    };
    const [decoded] = await codec.decode([foreign]);
    assert.deepEqual(defaultPayloadConverter.fromPayload(decoded as Payload), { prompt: 'from python' });
  });

  test('what it writes decrypts by hand into the protobuf of the original payload', async () => {
    const original = json({ link: 'https://example.com/x?X-Amz-Signature=abc' });
    const [encoded] = await codec.encode([original]);
    const data = Buffer.from(encoded?.data ?? []);
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, 12));
    decipher.setAuthTag(data.subarray(data.length - 16));
    const plain = Buffer.concat([decipher.update(data.subarray(12, data.length - 16)), decipher.final()]);
    assert.deepEqual(plain, protoPayload({ encoding: 'json/plain' }, Buffer.from(original.data ?? [])));
    const viaProto = temporal.api.common.v1.Payload.decode(plain);
    assert.equal(text(viaProto.metadata.encoding), 'json/plain');
  });
});

describe('failure converter', () => {
  test('moves the message and stack trace into encoded attributes (which the codec encrypts)', () => {
    const failure = failureConverter.errorToFailure(new Error('prompt secret marker'), defaultPayloadConverter);
    assert.equal(failure.message, 'Encoded failure');
    assert.equal(failure.stackTrace, '');
    assert.ok(failure.encodedAttributes);
    const back = failureConverter.failureToError(failure, defaultPayloadConverter);
    assert.equal(back.message, 'prompt secret marker');
  });
});
