// Payload encryption from the environment: PAYLOAD_ENCRYPTION_KEYS_FILE set means every payload the
// worker, the client library, the CLI and Schedules write is encrypted (encryption-codec.ts) and
// failure messages with it (failure-converter.ts); unset means plain payloads, as before.
import type { DataConverter } from '@temporalio/common';
import { EncryptionCodec } from './encryption-codec';
import { KeyFile } from './key-file';

export * from './encryption-codec';
export * from './key-file';
export * from './token-file';

export const KEYS_FILE_VAR = 'PAYLOAD_ENCRYPTION_KEYS_FILE';

/** The module Worker.create and the workflow bundler load the failure converter from. */
export const FAILURE_CONVERTER_PATH = require.resolve('./failure-converter');

export interface PayloadEncryption {
  keyFile: KeyFile;
  codec: EncryptionCodec;
  /** For Client and Worker.create: the codec and the failure converter (by path). */
  dataConverter: DataConverter;
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
  const codec = new EncryptionCodec({ keys: () => keyFile.keys(), source: `${KEYS_FILE_VAR} (${file})` });
  const encryption: PayloadEncryption = {
    keyFile,
    codec,
    dataConverter: { payloadCodecs: [codec], failureConverterPath: FAILURE_CONVERTER_PATH },
  };
  opened.set(file, encryption);
  return encryption;
}

/** Encryption as the environment asks for it (PAYLOAD_ENCRYPTION_KEYS_FILE), or undefined: plain payloads. */
export function payloadEncryptionFromEnv(env: NodeJS.ProcessEnv = process.env): PayloadEncryption | undefined {
  const file = env[KEYS_FILE_VAR];
  return file ? payloadEncryption(file) : undefined;
}
