// The codec server's request and answer bodies: protobuf's JSON of temporal.api.common.v1.Payloads,
// `{"payloads": [{"metadata": {"<key>": "<base64>"}, "data": "<base64>"}]}`. A request is checked whole
// before a byte of it is decoded: Buffer.from takes an object with a `length` as an array of that many
// bytes, so `{"data": {"length": 6e7}}` would have it allocate and fill 60 MB. Protobuf's JSON leaves
// empty fields out (the temporal CLI sends `{}` for no payloads) and may write null for them.
import type { Payload } from '@temporalio/common';
import { z } from 'zod';

/** The Web UI and the temporal CLI send one Payloads field (an input, a result, a memo) at a time. */
export const MAX_PAYLOADS = 1000;
/** Standard or URL-safe base64, padded or not: what protobuf's JSON parsers accept. */
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

const base64 = z.string().regex(BASE64, 'not base64');
const payloadJson = z.object({
  metadata: z.record(z.string(), base64).nullish(),
  data: base64.nullish(),
});
const payloadsJson = z.object({
  payloads: z.array(payloadJson).max(MAX_PAYLOADS, `at most ${MAX_PAYLOADS} payloads a request`).nullish(),
});

export interface JsonPayload {
  metadata: Record<string, string>;
  data: string;
}

/** A request body that is not Payloads' JSON; the message names where, never a value. */
export class BadPayloads extends Error {
  override readonly name = 'BadPayloads';
}

/** The payloads of a parsed request body; throws BadPayloads at the first thing that is not their JSON. */
export function payloadsOfRequest(body: unknown): Payload[] {
  const parsed = payloadsJson.safeParse(body);
  if (!parsed.success) {
    const [issue] = parsed.error.issues;
    const where = issue?.path.map(String).join('.');
    throw new BadPayloads(where ? `${where}: ${issue?.message}` : 'expected {"payloads": [...]}');
  }
  return (parsed.data.payloads ?? []).map(({ metadata, data }) => ({
    metadata: Object.fromEntries(
      Object.entries(metadata ?? {}).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))]),
    ),
    data: new Uint8Array(Buffer.from(data ?? '', 'base64')),
  }));
}

export function payloadToJson(p: Payload): JsonPayload {
  const metadata = Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? []).toString('base64')]),
  );
  return { metadata, data: Buffer.from(p.data ?? []).toString('base64') };
}
