// Payload encryption on the cluster: its key file and the codec server's token file, made on first run
// in the git-ignored data folder, and the health of the codec server (docs/security.md).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { generateKeyLine, generateToken } from '../../src/codec';
import { CLUSTER_CODEC_HTTPS_URL, CLUSTER_CODEC_URL, CLUSTER_FILES } from './layout';
import { answersOk } from './processes';
import { TLS_FILES } from './tls';

/** A secret file with `line` on first run (mode 0600), then left as it is. */
function ensureSecretFile(file: string, line: () => string, what: string, log: (line: string) => void): string {
  if (!existsSync(file)) {
    writeFileSync(file, `${line()}\n`, { mode: 0o600, flag: 'wx' });
    log(`${what}: created ${file}`);
  }
  return file;
}

/** The cluster's PAYLOAD_ENCRYPTION_KEYS_FILE: one new key on first run. */
export function ensureClusterPayloadKeys(log: (line: string) => void): string {
  return ensureSecretFile(CLUSTER_FILES.payloadKeys, generateKeyLine, 'payload keys', log);
}

/** The cluster codec server's CODEC_SERVER_TOKEN_FILE: one new token on first run. */
export function ensureClusterCodecToken(log: (line: string) => void): string {
  return ensureSecretFile(CLUSTER_FILES.codecToken, generateToken, 'codec server token', log);
}

/** The codec server's /health answers, over HTTP or (with sign-on) over HTTPS with the cluster's CA. */
export async function isCodecServerHealthy(): Promise<boolean> {
  return (
    (await answersOk(`${CLUSTER_CODEC_URL}/health`)) || (existsSync(TLS_FILES.caCert) && (await healthOverHttps()))
  );
}

function healthOverHttps(): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.get(
      `${CLUSTER_CODEC_HTTPS_URL}/health`,
      { ca: readFileSync(TLS_FILES.caCert), timeout: 3_000 },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.once('error', () => resolve(false));
    req.once('timeout', () => req.destroy());
  });
}
