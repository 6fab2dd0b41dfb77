// Payload encryption on the cluster: its key file, made on first run in the git-ignored data folder,
// and the health of the codec server the cluster's Web UI decodes with (docs/security.md).
import { existsSync, writeFileSync } from 'node:fs';
import { generateKeyLine } from '../../src/codec';
import { CLUSTER_CODEC_URL, CLUSTER_FILES } from './layout';

/** The cluster's PAYLOAD_ENCRYPTION_KEYS_FILE: one new key on first run (mode 0600), then left as it is. */
export function ensureClusterPayloadKeys(log: (line: string) => void): string {
  const file = CLUSTER_FILES.payloadKeys;
  if (!existsSync(file)) {
    writeFileSync(file, `${generateKeyLine()}\n`, { mode: 0o600, flag: 'wx' });
    log(`payload keys: created ${file}`);
  }
  return file;
}

export async function isCodecServerHealthy(): Promise<boolean> {
  try {
    const res = await fetch(`${CLUSTER_CODEC_URL}/health`, { signal: AbortSignal.timeout(3_000) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}
