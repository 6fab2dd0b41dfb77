// Payload encryption from the environment: PAYLOAD_ENCRYPTION_KEYS_FILE set means every payload the
// worker, the client library, the CLI and Schedules write is encrypted (encryption-codec.ts) and
// failure messages with it (failure-converter.ts), except the project rate limiters' (public-payloads.ts);
// unset means plain payloads, as before.
import type { DataConverter } from '@temporalio/common';
import { EncryptionCodec, type PayloadKeyError } from './encryption-codec';
import { KeyFile } from './key-file';
import { isPublicPayloadContext } from './public-payloads';

export * from './encryption-codec';
export * from './key-file';
export * from './token-file';
export * from './public-payloads';

export const KEYS_FILE_VAR = 'PAYLOAD_ENCRYPTION_KEYS_FILE';

/** The module Worker.create and the workflow bundler load the failure converter from. */
export const FAILURE_CONVERTER_PATH = require.resolve('./failure-converter');

export interface PayloadEncryption {
  keyFile: KeyFile;
  codec: EncryptionCodec;
  /** For Client and Worker.create: the codec and the failure converter (by path). */
  dataConverter: DataConverter;
  /**
   * For the limiter queue's Worker: writes every payload plain (its answers, its grant signals to jobs,
   * its failures), and decodes encrypted ones with these keys (limiters that ran before this rule).
   */
  limiterDataConverter: DataConverter;
  /** Calls `listener` for every payload that does not decrypt, until the returned function is called. */
  onKeyError(listener: (err: PayloadKeyError) => void): () => void;
}

const opened = new Map<string, PayloadEncryption>();

/**
 * Encryption with the key file at `file` (read now: a bad file throws KeyFileError naming the file
 * and line). One instance per file in a process, so every client and worker share one stat per use.
 */
export function payloadEncryption(file: string): PayloadEncryption {
  const known = opened.get(file);
  if (known) return known;
  const keyFile = new KeyFile(file);
  const keys = () => keyFile.keys();
  const source = `${KEYS_FILE_VAR} (${file})`;
  const listeners = new Set<(err: PayloadKeyError) => void>();
  const onKeyError = (err: PayloadKeyError) => listeners.forEach((listener) => listener(err));
  const codec = new EncryptionCodec({ keys, source, onKeyError, leavesPlain: isPublicPayloadContext });
  const limiterCodec = new EncryptionCodec({ keys, source, onKeyError, leavesPlain: () => true });
  const encryption: PayloadEncryption = {
    keyFile,
    codec,
    dataConverter: { payloadCodecs: [codec], failureConverterPath: FAILURE_CONVERTER_PATH },
    limiterDataConverter: { payloadCodecs: [limiterCodec], failureConverterPath: FAILURE_CONVERTER_PATH },
    onKeyError(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
  };
  opened.set(file, encryption);
  return encryption;
}

/** Encryption as the environment asks for it (PAYLOAD_ENCRYPTION_KEYS_FILE), or undefined: plain payloads. */
export function payloadEncryptionFromEnv(env: NodeJS.ProcessEnv = process.env): PayloadEncryption | undefined {
  const file = env[KEYS_FILE_VAR];
  return file ? payloadEncryption(file) : undefined;
}
