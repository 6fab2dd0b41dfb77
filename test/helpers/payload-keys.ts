// What a raw (undecoded) history says about payload encryption: the key ids its payloads name.

/** The encryption-key-id of every payload in a history object (SDK protos: metadata values are bytes). */
export function keyIdsIn(value: unknown, found = new Set<string>()): Set<string> {
  if (!value || typeof value !== 'object' || ArrayBuffer.isView(value)) return found;
  const keyId = (value as { metadata?: Record<string, Uint8Array> }).metadata?.['encryption-key-id'];
  if (keyId && ArrayBuffer.isView(keyId)) found.add(Buffer.from(keyId).toString());
  for (const v of Object.values(value)) keyIdsIn(v, found);
  return found;
}
