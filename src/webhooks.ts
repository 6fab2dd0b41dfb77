// `npm run webhooks [-- --port N] [--host H]`: the GitHub webhook receiver (src/webhooks/server.ts), a
// process of its own like the codec server: it holds the webhook secrets, not the admin API key. Its
// address, secrets file and settings: docs/operations.md, "Publishing from GitHub".
import { connectClient } from './connection';
import { startTracing, stopTracing } from './observability/tracing';
import { WebhookSecrets } from './webhooks/secrets';
import { DEFAULT_WEBHOOKS_PORT, startWebhookServer } from './webhooks/server';
import { runAsEntryPoint, stopOnSignal } from './process/lifecycle';
import { Settings } from './process/small-server';

const USAGE = 'usage: npm run webhooks [-- --port N] [--host H]';
export const SECRET_FILE_VAR = 'GITHUB_WEBHOOK_SECRET_FILE';

/** Settings from argv and the environment; throws one line on a bad setting. */
export function webhookSettings(
  argv: string[],
  env: NodeJS.ProcessEnv,
): { port: number; host: string; secretFile: string } {
  const read = new Settings(env, { args: argv, flags: { port: 'string', host: 'string' }, usage: USAGE });
  return {
    port: read.int('--port', DEFAULT_WEBHOOKS_PORT, { max: 65_535 }),
    host: read.text('--host') ?? '127.0.0.1',
    secretFile: read.required(SECRET_FILE_VAR, "the receiver verifies every delivery's signature"),
  };
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
