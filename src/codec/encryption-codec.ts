// AES-256-GCM payload encryption in the format of Temporal's encryption samples (TypeScript, Python, Go),
// so a service in another language that holds the key decodes these payloads and this codec decodes
// theirs. The format, metadata and bytes: docs/security.md, "Payload encryption: what is encrypted".
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec, SerializationContext } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { KeyRing } from './key-file';

export const ENCODING_KEY = 'encoding';
export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_KEY = 'encryption-key-id';
const CIPHER = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;

const ProtoPayload = temporal.api.common.v1.Payload;
const utf8 = (bytes: Uint8Array | null | undefined): string => Buffer.from(bytes ?? []).toString('utf8');

/** A payload this codec cannot decrypt: one line naming the key id and where keys come from. */
export class PayloadKeyError extends Error {
  override readonly name = 'PayloadKeyError';
}

export interface EncryptionCodecOptions {
  /** The keys now (read on every call: the key file re-reads itself when it changed). */
  keys: () => KeyRing;
  /** Names where the keys come from in errors, e.g. `PAYLOAD_ENCRYPTION_KEYS_FILE (/etc/keys)`. */
  source: string;
  /**
   * Payloads encode leaves plain (decode still decrypts whatever is encrypted): by the context the SDK
   * passes (the workflow that owns the payload), or always for the limiter's worker (public-payloads.ts).
   */
  leavesPlain?: (context: SerializationContext | undefined) => boolean;
  /** Told of every payload that does not decrypt (the worker counts them: a person must add a key). */
  onKeyError?: (err: PayloadKeyError) => void;
}

export function isEncrypted(payload: Payload): boolean {
  return utf8(payload.metadata?.[ENCODING_KEY]) === ENCRYPTED_ENCODING;
}

export class EncryptionCodec implements PayloadCodec {
  constructor(private readonly options: EncryptionCodecOptions) {}

  async encode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    if (this.options.leavesPlain?.(context)) return payloads;
    const { current } = this.options.keys();
    return payloads.map((payload) => encryptPayload(payload, current.id, current.key));
  }

  /** Payloads not marked binary/encrypted pass through: plain JSON from callers without the codec. */
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => (isEncrypted(payload) ? this.decrypt(payload) : payload));
  }

  private decrypt(payload: Payload): Payload {
    try {
      return this.tryDecrypt(payload);
    } catch (err) {
      if (err instanceof PayloadKeyError) this.options.onKeyError?.(err);
      throw err;
    }
  }

  private tryDecrypt(payload: Payload): Payload {
    const keyId = utf8(payload.metadata?.[KEY_ID_KEY]);
    if (!keyId) throw new PayloadKeyError('an encrypted payload has no encryption-key-id in its metadata');
    const key = this.options.keys().byId.get(keyId);
    if (!key)
      throw new PayloadKeyError(
        `payload encrypted with key "${keyId}", which is not in ${this.options.source}: add that key's line to the file`,
      );
    try {
      return decryptPayload(payload.data ?? new Uint8Array(), key);
    } catch (err) {
      throw new PayloadKeyError(
        `payload encrypted with key "${keyId}" does not decrypt with the key of that id in ${this.options.source}`,
        { cause: err },
      );
    }
  }
}

/** One payload encrypted with `key` under `keyId` (exported for tests and the codec server). */
export function encryptPayload(payload: Payload, keyId: string, key: Buffer): Payload {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(CIPHER, key, iv);
  const plain = ProtoPayload.encode(payload).finish();
  const data = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  return {
    metadata: {
      [ENCODING_KEY]: Buffer.from(ENCRYPTED_ENCODING),
      [KEY_ID_KEY]: Buffer.from(keyId),
    },
    data,
  };
}

function decryptPayload(data: Uint8Array, key: Buffer): Payload {
  if (data.length < IV_BYTES + TAG_BYTES) throw new Error('encrypted payload too short');
  const bytes = Buffer.from(data);
  const decipher = createDecipheriv(CIPHER, key, bytes.subarray(0, IV_BYTES));
  decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
  const plain = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]);
  const decoded = ProtoPayload.decode(plain);
  return { metadata: decoded.metadata, data: decoded.data };
}
