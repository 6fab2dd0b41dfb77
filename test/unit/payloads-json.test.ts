// test-lane: parallel
// The codec server's request body (src/codec/payloads-json.ts): protobuf's JSON of Payloads is taken in
// its liberal forms (fields left out, null, URL-safe base64); anything else is refused with where, before
// a byte is decoded; and an answer reads back as the request it would be.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BadPayloads, MAX_PAYLOADS, payloadsOfRequest, payloadToJson } from '../../src/codec/payloads-json';

const b64 = (text: string) => Buffer.from(text).toString('base64');
const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString();

test("protobuf's JSON of Payloads in every form its encoders write", () => {
  const [payload] = payloadsOfRequest({ payloads: [{ metadata: { encoding: b64('json/plain') }, data: b64('"x"') }] });
  assert.equal(text(payload?.metadata?.encoding), 'json/plain');
  assert.equal(text(payload?.data), '"x"');
  // Empty fields are left out (the temporal CLI sends `{}` for no payloads) or written as null.
  assert.deepEqual(payloadsOfRequest({}), []);
  assert.deepEqual(payloadsOfRequest({ payloads: null }), []);
  const [empty] = payloadsOfRequest({ payloads: [{}] });
  assert.deepEqual([empty?.metadata, empty?.data?.length], [{}, 0]);
  const [nulls] = payloadsOfRequest({ payloads: [{ metadata: null, data: null }] });
  assert.deepEqual([nulls?.metadata, nulls?.data?.length], [{}, 0]);
  // URL-safe and unpadded base64 read as the standard form does; unknown fields are ignored.
  const [urlSafe] = payloadsOfRequest({ payloads: [{ data: '-_8', externalPayloads: [] }] });
  assert.deepEqual([...(urlSafe?.data ?? [])], [0xfb, 0xff]);
  assert.equal(payloadsOfRequest({ payloads: Array.from({ length: MAX_PAYLOADS }, () => ({})) }).length, MAX_PAYLOADS);
});

test('anything else is refused before decoding, naming where and never the value', () => {
  const cases: [unknown, string][] = [
    [null, 'expected {"payloads": [...]}'],
    [[], 'expected {"payloads": [...]}'],
    ['{"payloads":[]}', 'expected {"payloads": [...]}'],
    [{ payloads: {} }, 'payloads: '],
    // Buffer.from would allocate what `length` names: 60 MB from a 38-byte body.
    [{ payloads: [{ data: { length: 6e7 } }] }, 'payloads.0.data: '],
    [{ payloads: [{ metadata: { encoding: { length: 6e7 } } }] }, 'payloads.0.metadata.encoding: '],
    [{ payloads: [{ data: [1, 2, 3] }] }, 'payloads.0.data: '],
    [{ payloads: [{ data: 'secret value!' }] }, 'payloads.0.data: not base64'],
    [{ payloads: [{ data: 'AA==', metadata: 'AA==' }] }, 'payloads.0.metadata: '],
    [{ payloads: [{ metadata: ['AA=='] }] }, 'payloads.0.metadata: '],
    [{ payloads: [{}, null] }, 'payloads.1: '],
    [{ payloads: [{}, 7] }, 'payloads.1: '],
    [{ payloads: Array.from({ length: MAX_PAYLOADS + 1 }, () => ({})) }, `payloads: at most ${MAX_PAYLOADS} payloads`],
  ];
  for (const [body, reason] of cases)
    assert.throws(
      () => payloadsOfRequest(body),
      (err: unknown) => err instanceof BadPayloads && err.message.startsWith(reason) && !err.message.includes('secret'),
      JSON.stringify(body)?.slice(0, 80),
    );
});

test('a metadata key named __proto__ sets no prototype', () => {
  const [payload] = payloadsOfRequest(
    JSON.parse(`{"payloads":[{"metadata":{"__proto__":"${b64('x')}","a":"${b64('b')}"}}]}`),
  );
  assert.equal(Object.getPrototypeOf(payload?.metadata), Object.prototype);
  assert.deepEqual(Object.keys(payload?.metadata ?? {}), ['a']);
});

test('an answer is the JSON a request would carry', () => {
  const payload = { metadata: { encoding: Buffer.from('binary/encrypted') }, data: new Uint8Array([0, 255, 7]) };
  const json = payloadToJson(payload);
  assert.deepEqual(json, { metadata: { encoding: b64('binary/encrypted') }, data: 'AP8H' });
  const [back] = payloadsOfRequest({ payloads: [json] });
  assert.deepEqual([text(back?.metadata?.encoding), [...(back?.data ?? [])]], ['binary/encrypted', [0, 255, 7]]);
});
