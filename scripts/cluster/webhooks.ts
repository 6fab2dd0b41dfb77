// The GitHub webhook receiver beside the cluster (`npm run cluster` starts it after the codec server;
// `-- --stop` stops it): npm run webhooks on its default port, with the cluster's payload keys (it
// reads the keepers' source memo) and a webhook secret made on first run in the data folder (mode 0600).
import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../tools';
import { DEFAULT_WEBHOOKS_PORT } from '../../src/webhooks/server';
import { CLUSTER_ADDRESS, CLUSTER_DATA_DIR, CLUSTER_FILES, CLUSTER_NAMESPACE } from './layout';
import { answersOk, runningProcess, startDetached, stopRecorded, waitUntil } from './processes';

const HOST = '127.0.0.1';
export const WEBHOOKS_PORT = DEFAULT_WEBHOOKS_PORT;
export const CLUSTER_WEBHOOKS_URL = `http://${HOST}:${WEBHOOKS_PORT}`;
export const WEBHOOKS_FILES = {
  secret: path.join(CLUSTER_DATA_DIR, 'github-webhook-secret'),
  log: path.join(CLUSTER_DATA_DIR, 'webhooks.log'),
  state: path.join(CLUSTER_DATA_DIR, 'webhooks.json'),
};

/** The cluster's GITHUB_WEBHOOK_SECRET_FILE: one random secret on first run, then left as it is. */
export function ensureWebhookSecret(log: (line: string) => void): string {
  if (!existsSync(WEBHOOKS_FILES.secret)) {
    writeFileSync(WEBHOOKS_FILES.secret, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
    log(`webhook secret: created ${WEBHOOKS_FILES.secret} (give GitHub the same secret)`);
  }
  return WEBHOOKS_FILES.secret;
}

export function isWebhookReceiverHealthy(): Promise<boolean> {
  return answersOk(`${CLUSTER_WEBHOOKS_URL}/health`);
}

/** Starts the receiver unless it runs; returns its URL and secret file. */
export async function ensureWebhookReceiver(
  log: (line: string) => void,
  /** TEMPORAL_TLS_* when the cluster runs with --tls, a service's TEMPORAL_OIDC_* with --sso. */
  clientEnv: Record<string, string> = {},
): Promise<{ url: string; secretFile: string }> {
  const secretFile = ensureWebhookSecret(log);
  const running = runningProcess(WEBHOOKS_FILES.state);
  // A receiver started for the cluster's other mode (TLS, sign-on) would be refused: it starts again.
  if (running && JSON.stringify(running.clientEnv ?? {}) !== JSON.stringify(clientEnv)) {
    log("webhook receiver: restarting for the cluster's connection settings");
    await stopRecorded(WEBHOOKS_FILES.state);
  }
  if (!runningProcess(WEBHOOKS_FILES.state) || !(await isWebhookReceiverHealthy())) {
    log(`webhook receiver: starting at ${CLUSTER_WEBHOOKS_URL}/github`);
    const started = startDetached(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(ROOT, 'src', 'webhooks.ts'),
        '--port',
        String(DEFAULT_WEBHOOKS_PORT),
        '--host',
        HOST,
      ],
      {
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '',
          TEMPORAL_ADDRESS: CLUSTER_ADDRESS,
          TEMPORAL_NAMESPACE: CLUSTER_NAMESPACE,
          PAYLOAD_ENCRYPTION_KEYS_FILE: CLUSTER_FILES.payloadKeys,
          GITHUB_WEBHOOK_SECRET_FILE: secretFile,
          ...clientEnv,
        },
        log: WEBHOOKS_FILES.log,
        stateFile: WEBHOOKS_FILES.state,
        extra: { clientEnv },
      },
    );
    await waitUntil('the webhook receiver', isWebhookReceiverHealthy, started, WEBHOOKS_FILES.log, 60_000);
  }
  return { url: `${CLUSTER_WEBHOOKS_URL}/github`, secretFile };
}

export async function stopWebhookReceiver(): Promise<boolean> {
  return (await stopRecorded(WEBHOOKS_FILES.state)) !== undefined;
}
