// `npm run webhooks [-- --port N] [--host H]`: the GitHub webhook receiver (src/webhooks/server.ts),
// default 127.0.0.1:8635, POST /github. Its own process, like the codec server: it holds the webhook
// secrets, not the admin API key. Environment: GITHUB_WEBHOOK_SECRET_FILE (one secret per line, re-read
// on change) and the Temporal connection settings the CLI uses (with payload encryption, the same
// PAYLOAD_ENCRYPTION_KEYS_FILE: it reads the keepers' source memo).
import { connectClient } from './connection';
import { startTracing, stopTracing } from './observability/tracing';
import { WebhookSecrets } from './webhooks/secrets';
import { DEFAULT_WEBHOOKS_PORT, startWebhookServer } from './webhooks/server';
import { runAsEntryPoint, stopOnSignal } from './process/lifecycle';

const USAGE = 'usage: npm run webhooks [-- --port N] [--host H]';
export const SECRET_FILE_VAR = 'GITHUB_WEBHOOK_SECRET_FILE';

/** Settings from argv and the environment; throws one line on a bad setting. */
export function webhookSettings(
  argv: string[],
  env: NodeJS.ProcessEnv,
): { port: number; host: string; secretFile: string } {
  let port = DEFAULT_WEBHOOKS_PORT;
  let host = '127.0.0.1';
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--port' && value !== undefined && /^\d+$/.test(value) && Number(value) < 65536) port = Number(value);
    else if (flag === '--host' && value) host = value;
    else throw new Error(USAGE);
  }
  const secretFile = env[SECRET_FILE_VAR];
  if (!secretFile) throw new Error(`${SECRET_FILE_VAR} is not set: the receiver verifies every delivery's signature`);
  return { port, host, secretFile };
}

export async function main(argv = process.argv.slice(2), env = process.env): Promise<void> {
  const settings = webhookSettings(argv, env);
  const secrets = new WebhookSecrets(settings.secretFile);
  await startTracing(env, 'docs-admin-webhooks');
  const client = await connectClient(env);
  const server = await startWebhookServer({ ...settings, client, secrets });
  console.log(`webhook receiver on ${server.url}/github (secrets ${settings.secretFile})`);
  stopOnSignal(
    () => server.close(),
    () => client.connection.close(),
    () => stopTracing(),
  );
}

if (require.main === module) runAsEntryPoint('webhooks', () => main());
