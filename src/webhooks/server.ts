// The GitHub webhook receiver: POST /github verified with X-Hub-Signature-256 against every secret of
// GITHUB_WEBHOOK_SECRET_FILE (@octokit/webhooks-methods), then a push or a merged pull request becomes a
// `publish` signal to the keepers of that repository and branch (the keepers do the slow work, so the
// answer comes well within GitHub's 10 s). A redelivery (same X-GitHub-Delivery) is answered from
// memory here, and the keeper ignores a delivery id it has taken already (it carries them), so nothing
// happens twice even across a restart of this process. Bad signature 401, bad body 400: one line each,
// nothing signalled.
import { type IncomingMessage, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import { inSpan } from '../observability/tracing';
import { publishSignal } from '../shared/bundle-keeper';
import type { PublishRequest } from '../shared/publishing';
import { webhookAction } from './events';
import type { WebhookSecrets } from './secrets';
import { type Verify, loadVerify } from './signature';
import { KeeperDirectory, agentJobOf } from './targets';

export const DEFAULT_WEBHOOKS_PORT = 8635;
/** GitHub caps payloads at 25 MB. */
const MAX_BODY = 25 * 1024 * 1024;
/** Deliveries remembered for redelivery answers. */
const REMEMBERED = 1_000;
/** Under GitHub's 10 s: a lookup or signal slower than this answers 503 (the delivery can be redelivered). */
const DEADLINE_MS = 8_000;

export interface WebhookServerOptions {
  host: string;
  port: number;
  client: Client;
  secrets: WebhookSecrets;
  log?: (line: string) => void;
}

export interface WebhookServer {
  url: string;
  server: Server;
  close(): Promise<void>;
}

class Reply extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function startWebhookServer(options: WebhookServerOptions): Promise<WebhookServer> {
  const log = options.log ?? ((line: string) => console.error(line));
  const handler = new DeliveryHandler(options.client, await loadVerify(), options.secrets);

  const server = createServer((req, res) => {
    const delivery = String(req.headers['x-github-delivery'] ?? '').slice(0, 100);
    const event = String(req.headers['x-github-event'] ?? '').slice(0, 60);
    if (req.url === '/health' && req.method === 'GET') return void res.writeHead(200).end('ok\n');
    const finish = (status: number, text: string) => {
      log(`webhooks: ${status} ${event || '-'} ${delivery || '-'}: ${text}`);
      if (!res.headersSent) res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(`${text}\n`);
    };
    // One span per delivery when tracing is on: the event's name and the status answered, never the body.
    const attributes = { 'http.request.method': req.method ?? 'POST', 'http.route': '/github', 'github.event': event };
    void inSpan(`${req.method ?? 'POST'} /github`, attributes, async (set) => {
      await handler
        .handle(req, delivery, event)
        .then(
          (text) => finish(202, text),
          (err: unknown) =>
            err instanceof Reply
              ? finish(err.status, err.message)
              : finish(503, `could not reach Temporal: ${(err as Error).message.split('\n')[0]!.slice(0, 200)}`),
        )
        .catch(() => res.destroy());
      set({ 'http.response.status_code': res.statusCode });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host}:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

class DeliveryHandler {
  readonly #keepers: KeeperDirectory;
  /** Deliveries that signalled keepers, and what was answered (a delivery with no keeper is not kept). */
  readonly #done = new Map<string, string>();

  constructor(
    private readonly client: Client,
    private readonly verify: Verify,
    private readonly secrets: WebhookSecrets,
  ) {
    this.#keepers = new KeeperDirectory(client);
  }

  /** The answer's text (202), or throws a Reply with the status and one line. */
  async handle(req: IncomingMessage, delivery: string, event: string): Promise<string> {
    const url = new URL(req.url ?? '/', 'http://receiver');
    if (url.pathname !== '/github') throw new Reply(404, 'not found (GitHub webhooks go to POST /github)');
    if (req.method !== 'POST') throw new Reply(405, 'method not allowed: POST /github');
    const body = await readBody(req);
    const signature = req.headers['x-hub-signature-256'];
    if (typeof signature !== 'string' || !(await this.verified(body, signature)))
      throw new Reply(401, 'bad signature: X-Hub-Signature-256 does not match any secret');
    if (!event) throw new Reply(400, 'bad request: no X-GitHub-Event header');
    const seen = this.#done.get(delivery);
    if (seen) return `redelivery of ${delivery}: already handled (${seen})`;
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      throw new Reply(400, 'bad body: not JSON (set the webhook content type to application/json)');
    }
    let action;
    try {
      action = webhookAction(event, parsed);
    } catch (err) {
      throw new Reply(400, `bad body: ${(err as Error).message}`);
    }
    if (action.kind === 'ping') return 'pong';
    if (action.kind === 'ignore') return `ignored: ${action.reason}`;
    return withDeadline(this.publish(action, delivery));
  }

  private async verified(body: string, signature: string): Promise<boolean> {
    for (const secret of this.secrets.current()) if (await this.verify(secret, body, signature)) return true;
    return false;
  }

  private async publish(action: Extract<ReturnType<typeof webhookAction>, { kind: 'publish' }>, delivery: string) {
    const keepers = await this.#keepers.keepersOf(action.repository, action.branch);
    if (keepers.length === 0) return `no keeper for ${action.repository} @ ${action.branch}: nothing to do`;
    const agentWorkflowId = action.pullRequest ? await agentJobOf(this.client, action.pullRequest.url) : null;
    const request: PublishRequest = {
      repository: action.repositoryUrl,
      ref: action.branch,
      ...(action.sha ? { sha: action.sha } : {}),
      ...(delivery ? { deliveryId: delivery } : {}),
      ...(action.pullRequest ? { pullRequest: action.pullRequest } : {}),
      ...(agentWorkflowId ? { agentWorkflowId } : {}),
    };
    await Promise.all(
      keepers.map((k) => this.client.workflow.getHandle(k.workflowId, k.runId).signal(publishSignal, request)),
    );
    const text = `publish signalled to ${keepers.map((k) => k.workflowId).join(', ')}`;
    if (delivery) {
      this.#done.set(delivery, text);
      if (this.#done.size > REMEMBERED) this.#done.delete(this.#done.keys().next().value!);
    }
    return text;
  }
}

function withDeadline<T>(promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Reply(503, `Temporal did not answer within ${DEADLINE_MS} ms`)), DEADLINE_MS);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new Reply(413, 'payload too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
