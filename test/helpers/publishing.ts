// What the publish-loop tests share: the webhook receiver in-process with a secrets file, signing its
// deliveries as GitHub does, and a keeper with a source whose first bundle is applied and whose memo the
// receiver can see.
import type { Client } from '@temporalio/client';
import { ensureKeeper } from '../../src/client';
import { repositoryKey } from '../../src/policies/validation/publish';
import { type KeeperStatus, keeperStatusQuery } from '../../src/shared/bundle-keeper';
import { WebhookSecrets } from '../../src/webhooks/secrets';
import { type WebhookServer, startWebhookServer } from '../../src/webhooks/server';
import { keepersOf } from '../../src/webhooks/targets';
import { githubSender } from './github';
import { type DocsAdminStack, waitFor } from './temporal';

/** `npm run webhooks` in-process on a free loopback port, and a sender signing with `secret`. */
export async function startSignedReceiver(client: Client, secretsFile: string, secret: string) {
  const receiver: WebhookServer = await startWebhookServer({
    host: '127.0.0.1',
    port: 0,
    client,
    secrets: new WebhookSecrets(secretsFile),
    log: () => undefined,
  });
  return { receiver, send: await githubSender(receiver.url, secret) };
}

/**
 * A keeper of `projectId` (domain `<projectId>.docs.example.com`, repository
 * `docs-emulator/<projectId>`, branch main) with the sink `name`, once its first bundle is applied and
 * its source memo is visible to the receiver. `applied(sha)` waits until that commit is applied and
 * answers the status then.
 */
export async function startSourcedKeeper(
  client: Client,
  stack: DocsAdminStack,
  o: { name: string; projectId: string; taskQueue: string },
) {
  const { name, projectId } = o;
  const domain = `${projectId}.docs.example.com`;
  const repositoryUrl = `https://github.com/docs-emulator/${projectId}`;
  stack.emu.push({ projectId, domain, message: 'Initial docs' });
  const handle = await ensureKeeper(
    client,
    { domain, sink: name, source: { projectId, repository: repositoryUrl, ref: 'main' } },
    { taskQueue: o.taskQueue },
  );
  const status = (): Promise<KeeperStatus> => handle.query(keeperStatusQuery);
  await waitFor(async () => (await status()).jobId, { timeoutMs: 60_000, what: `${name}: first bundle applied` });
  await waitFor(async () => (await keepersOf(client, repositoryKey(repositoryUrl)!, 'main')).length > 0, {
    timeoutMs: 30_000,
    what: `${name}: the keeper's source memo visible`,
  });
  const applied = async (sha: string) =>
    waitFor(async () => ((await status()).publishing?.commit?.sha === sha ? status() : null), {
      timeoutMs: 60_000,
      what: `${name}: commit ${sha.slice(0, 7)} applied`,
    });
  return { projectId, domain, repositoryUrl, handle, status, applied };
}
