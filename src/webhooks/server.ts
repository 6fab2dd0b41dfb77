// The GitHub webhook receiver: POST /github verified with X-Hub-Signature-256 against every secret of
// GITHUB_WEBHOOK_SECRET_FILE (@octokit/webhooks-methods); a push or a merged pull request becomes a
// `publish` signal to the keepers of that repository and branch, which do the slow work, so the answer
// comes well within GitHub's 10 s. What it answers, remembers and bounds before a signature checks:
// docs/operations.md, "Publishing from GitHub" (bad signature 401, bad body 400: one line each, nothing signalled).
import { createHash } from 'node:crypto';
import { type IncomingMessage, createServer } from 'node:http';
import type { Client } from '@temporalio/client';
import { inSpan } from '../observability/tracing';
import { type Listening, listen, readBody, sendError, sendText, StatusError } from '../process/small-server';
import { publishSignal } from '../shared/bundle-keeper';
import type { PublishRequest } from '../shared/publishing';
import { webhookAction } from './events';
import type { WebhookSecrets } from './secrets';
import { type Verify, loadVerify } from './signature';
import { KeeperDirectory, agentJobOf } from './targets';

export const DEFAULT_WEBHOOKS_PORT = 8635;
/**
 * The largest body read before its signature is checked. GitHub allows 25 MB, but a push or pull_request
 * delivery is a few kB to a few hundred: only a push listing well over a thousand commits or files comes
 * near 1 MiB. Such a delivery is refused (413, shown in the webhook's recent deliveries); `docs-admin
 * publish` builds the branch head instead.
 */
export const MAX_UNSIGNED_BODY_BYTES = 1024 * 1024;
/** Requests read or verified at once; GitHub sends a delivery at a time per event, far fewer than this. */
export const MAX_UNSIGNED_REQUESTS = 64;
/** GitHub gives up on a delivery after 10 s: a request not read whole by then is cut off (408). */
const UNSIGNED_READ_MS = 10_000;
/** Deliveries (and bodies) remembered for redelivery and replay answers. */
const REMEMBERED = 1_000;
/** Under GitHub's 10 s: a lookup or signal slower than this answers 503 (the delivery can be redelivered). */
const DEADLINE_MS = 8_000;

export interface WebhookServerOptions {
  host: string;
  port: number;
  client: Client;
  secrets: WebhookSecrets;
  log?: (line: string) => void;
  /** Bounds of unsigned requests (tests); the defaults above otherwise. */
  limits?: Partial<UnsignedLimits>;
}

export interface UnsignedLimits {
  bodyBytes: number;
  requests: number;
}

export type WebhookServer = Listening;

export async function startWebhookServer(options: WebhookServerOptions): Promise<WebhookServer> {
  const log = options.log ?? ((line: string) => console.error(line));
  const limits = { bodyBytes: MAX_UNSIGNED_BODY_BYTES, requests: MAX_UNSIGNED_REQUESTS, ...options.limits };
  const handler = new DeliveryHandler(options.client, await loadVerify(), options.secrets, limits);

  const server = createServer((req, res) => {
    const delivery = String(req.headers['x-github-delivery'] ?? '').slice(0, 100);
    const event = String(req.headers['x-github-event'] ?? '').slice(0, 60);
    if (req.url === '/health' && req.method === 'GET') return sendText(res, 200, 'ok');
    const logged = (status: number, text: string) =>
      log(`webhooks: ${status} ${event || '-'} ${delivery || '-'}: ${text}`);
    // One span per delivery when tracing is on: the event's name and the status answered, never the body.
    const attributes = { 'http.request.method': req.method ?? 'POST', 'http.route': '/github', 'github.event': event };
    void inSpan(`${req.method ?? 'POST'} /github`, attributes, async (set) => {
      await handler.handle(req, delivery, event).then(
        (text) => {
          logged(202, text);
          sendText(res, 202, text);
        },
        (err: unknown) => {
          const refusal = err instanceof StatusError ? err : temporalUnreachable(err);
          logged(refusal.status, refusal.message);
          if (refusal.status === 503) res.setHeader('retry-after', '1');
          sendError(req, res, refusal, 'text');
        },
      );
      set({ 'http.response.status_code': res.statusCode });
    });
  });
  // Whole requests (headers and body) within GitHub's own timeout: a slow sender holds no slot longer.
  server.requestTimeout = UNSIGNED_READ_MS;
  server.headersTimeout = UNSIGNED_READ_MS;
  return listen(server, options.port, options.host);
}

/**
 * A failed lookup or signal: 503, so that GitHub's redelivery may succeed. Temporal may be down, or the
 * keeper's run may have continued as new since the (2 s) lookup: the redelivery finds the new run.
 */
const temporalUnreachable = (err: unknown) =>
  new StatusError(
    503,
    `could not signal the keepers through Temporal (GitHub's redelivery tries again): ${(err as Error).message.split('\n')[0]!.slice(0, 200)}`,
  );

class DeliveryHandler {
  readonly #keepers: KeeperDirectory;
  /** Deliveries that signalled keepers, and what was answered (a delivery with no keeper is not kept). */
  readonly #done = new Map<string, string>();
  /** The same, by the SHA-256 of the signed body: a replay under a new delivery id. */
  readonly #bodies = new Map<string, string>();
  /** Requests being read or verified now. */
  #unsigned = 0;

  constructor(
    private readonly client: Client,
    private readonly verify: Verify,
    private readonly secrets: WebhookSecrets,
    private readonly limits: UnsignedLimits,
  ) {
    this.#keepers = new KeeperDirectory(client);
  }

  /** The answer's text (202), or throws a StatusError with the status and one line. */
  async handle(req: IncomingMessage, delivery: string, event: string): Promise<string> {
    const url = new URL(req.url ?? '/', 'http://receiver');
    if (url.pathname !== '/github') throw new StatusError(404, 'not found (GitHub webhooks go to POST /github)');
    if (req.method !== 'POST') throw new StatusError(405, 'method not allowed: POST /github');
    const body = await this.signedBody(req);
    if (!event) throw new StatusError(400, 'bad request: no X-GitHub-Event header');
    const seen = this.#done.get(delivery);
    if (seen) return `redelivery of ${delivery}: already handled (${seen})`;
    const digest = createHash('sha256').update(body).digest('base64url');
    const replayed = this.#bodies.get(digest);
    if (replayed) return `replay of a body already handled (${replayed}): nothing signalled`;
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      throw new StatusError(400, 'bad body: not JSON (set the webhook content type to application/json)');
    }
    let action;
    try {
      action = webhookAction(event, parsed);
    } catch (err) {
      throw new StatusError(400, `bad body: ${(err as Error).message}`);
    }
    if (action.kind === 'ping') return 'pong';
    if (action.kind === 'ignore') return `ignored: ${action.reason}`;
    return withDeadline(this.publish(action, delivery, digest));
  }

  /**
   * The body, once its signature matches: read within the unsigned bounds (a request without a signature
   * is refused before any of it is read).
   */
  private async signedBody(req: IncomingMessage): Promise<string> {
    const signature = req.headers['x-hub-signature-256'];
    if (typeof signature !== 'string')
      throw new StatusError(401, 'bad signature: no X-Hub-Signature-256 header (set a secret on the webhook)');
    if (this.#unsigned >= this.limits.requests)
      throw new StatusError(503, `busy: ${this.limits.requests} unverified requests in progress`);
    this.#unsigned++;
    try {
      const body = await readBody(req, this.limits.bodyBytes).then(
        (bytes) => bytes.toString('utf8'),
        (err: unknown) => {
          if (!(err instanceof StatusError) || err.status !== 413) throw err;
          throw new StatusError(413, `payload too large: over ${this.limits.bodyBytes} bytes before its signature`);
        },
      );
      if (!(await this.verified(body, signature)))
        throw new StatusError(401, 'bad signature: X-Hub-Signature-256 does not match any secret');
      return body;
    } finally {
      this.#unsigned--;
    }
  }

  private async verified(body: string, signature: string): Promise<boolean> {
    for (const secret of this.secrets.current()) if (await this.verify(secret, body, signature)) return true;
    return false;
  }

  private async publish(
    action: Extract<ReturnType<typeof webhookAction>, { kind: 'publish' }>,
    delivery: string,
    digest: string,
  ) {
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
    if (delivery) remember(this.#done, delivery, text);
    remember(this.#bodies, digest, `delivery ${delivery || '-'}`);
    return text;
  }
}

/** Adds to a bounded memory, forgetting the oldest entry past REMEMBERED. */
function remember(memory: Map<string, string>, key: string, value: string): void {
  memory.set(key, value);
  if (memory.size > REMEMBERED) memory.delete(memory.keys().next().value!);
}

function withDeadline<T>(promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new StatusError(503, `Temporal did not answer within ${DEADLINE_MS} ms`)),
      DEADLINE_MS,
    );
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
