// What the worker's payloads are written with: the payload codec and failure converter of
// PAYLOAD_ENCRYPTION_KEYS_FILE (src/codec), or plain JSON when it is not set (with one warning).
import { Client } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type { Logger } from '@temporalio/worker';
import { FAILURE_CONVERTER_PATH, KEYS_FILE_VAR, payloadEncryption } from '../codec';
import type { WorkerConfig } from '../config';

export interface WorkerPayloads {
  /** For every Worker.create of this process (undefined: the SDK's default, plain JSON). */
  dataConverter?: DataConverter;
  /** The failure converter the workflow code is bundled with (it runs in the workflow sandbox too). */
  failureConverterPath?: string;
  /** The client activities use (limiter asks, use reports, send checkpoints), writing payloads the same way. */
  clientFor(client: Client): Client;
}

/** Reads the key file now: a bad one fails the start with KeyFileError (file and line). */
export function workerPayloads(config: WorkerConfig, logger: Logger): WorkerPayloads {
  if (!config.payloadKeysFile) {
    logger.warn(
      `${KEYS_FILE_VAR} is not set: workflow inputs, results and failure messages are stored in plain text in Temporal's history`,
    );
    return { clientFor: (client) => client };
  }
  const { dataConverter } = payloadEncryption(config.payloadKeysFile);
  return {
    dataConverter,
    failureConverterPath: FAILURE_CONVERTER_PATH,
    clientFor: (client) => new Client({ connection: client.connection, namespace: config.namespace, dataConverter }),
  };
}
