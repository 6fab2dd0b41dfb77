// The codec server for people: the Temporal Web UI (its `codec.endpoint`) and `temporal
// --codec-endpoint` POST payloads to /decode (and /encode) as `{"payloads":[{"metadata":{k: base64},
// "data": base64}]}` and show what comes back, so a person reads decoded inputs and results while
// Temporal stores ciphertext. Browsers are let in from the configured UI origins only (CORS, with the
// preflight the UI sends). Every request but the preflight and /health must carry a bearer token: one
// of the token file, or an access token of the sign-on provider with a role on the request's namespace
// (oidc-tokens.ts); unless the server was started with --no-auth.
import { type IncomingMessage, type RequestListener, type Server, type ServerResponse, createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { inSpan } from '../observability/tracing';
import type { AddressInfo } from 'node:net';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { isEncrypted } from './encryption-codec';
import { bearerToken, tokenMatches } from './token-file';
import { looksLikeJwt, requireRoleOn, TokenRefused, type VerifiedToken } from './oidc-tokens';
import { refusalLogger } from './refusal-log';

export const DEFAULT_CODEC_SERVER_PORT = 8634;
/** Temporal caps a payload at 2 MB; the UI decodes a page of history at once. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;
// What the Web UI's browser code sends (ui-server 2.42 and 2.54, codec.passAccessToken): Authorization-Extras
// carries the person's ID token beside the access token; a preflight that left it out fails the call.
const ALLOWED_HEADERS = 'Content-Type, X-Namespace, Authorization, Authorization-Extras';
/** Temporal's namespace names; anything else in X-Namespace is refused before it reaches a message. */
const NAMESPACE_FORM = /^[\w.-]{1,255}$/;

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** Origins a browser may call from, e.g. http://127.0.0.1:8633 (exact match). */
  corsOrigins: readonly string[];
  /**
   * Who may call: every request but the CORS preflight and /health needs `Authorization: Bearer
   * <token>` that one of these accepts. Undefined only for --no-auth: anyone who reaches it decodes.
   */
  auth: CodecServerAuth | undefined;
  /**
   * Serve HTTPS with this certificate (PEM). The Web UI passes the signed-in person's access token
   * only to an https:// codec endpoint (ui-server 2.42's browser code; 2.54 signs on through it too), so sign-on needs it.
   */
  tls?: { cert: Buffer; key: Buffer };
  host?: string;
  /** 0: any free port. */
  port?: number;
  /** One line per payload that cannot be decoded (it is returned as it came). */
  log?: (line: string) => void;
}

export interface CodecServerAuth {
  /** The token file's tokens now (read on every request: the file re-reads itself when it changed). */
  tokens?: () => readonly string[];
  /** Verifies a sign-on access token (oidc-tokens.ts oidcVerifier); throws TokenRefused. */
  accessTokens?: (token: string) => Promise<VerifiedToken>;
  /** The namespace of a request without X-Namespace (the temporal CLI sends none). */
  defaultNamespace: string;
}

export interface CodecServer {
  url: string;
  server: Server;
  close(): Promise<void>;
}

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function fromJson(p: JsonPayload): Payload {
  const metadata = Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))]),
  );
  return { metadata, data: new Uint8Array(Buffer.from(p.data ?? '', 'base64')) };
}

function toJson(p: Payload): JsonPayload {
  const metadata = Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? []).toString('base64')]),
  );
  return { metadata, data: Buffer.from(p.data ?? []).toString('base64') };
}

async function readPayloads(req: IncomingMessage): Promise<Payload[]> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `request body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, 'request body is not JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new HttpError(400, 'expected {"payloads": [...]}');
  // Protobuf's JSON leaves an empty list out: the Go SDK's remote codec (the temporal CLI) sends `{}`.
  const payloads = (body as { payloads?: unknown }).payloads ?? [];
  if (!Array.isArray(payloads)) throw new HttpError(400, 'expected {"payloads": [...]}');
  return (payloads as JsonPayload[]).map(fromJson);
}

/** Decodes one payload at a time: one that cannot be decoded goes back as it came, and is logged. */
async function decodeEach(codec: PayloadCodec, payloads: Payload[], log: (line: string) => void): Promise<Payload[]> {
  return Promise.all(
    payloads.map(async (payload) => {
      if (!isEncrypted(payload)) return payload;
      try {
        const [decoded] = await codec.decode([payload]);
        return decoded ?? payload;
      } catch (err) {
        log(`cannot decode a payload: ${(err as Error).message}`);
        return payload;
      }
    }),
  );
}

/** The request's namespace: X-Namespace (the Web UI's), else the default (the temporal CLI's). */
function namespaceOf(req: IncomingMessage, defaultNamespace: string): string {
  const header = req.headers['x-namespace'];
  if (header === undefined || header === '') return defaultNamespace;
  if (typeof header !== 'string' || !NAMESPACE_FORM.test(header))
    throw new HttpError(400, 'X-Namespace is not a namespace name');
  return header;
}

/** Passes a caller the auth lets in; throws TokenRefused (401/403/503) otherwise. */
async function authorize(req: IncomingMessage, auth: CodecServerAuth): Promise<void> {
  const given = bearerToken(req.headers.authorization);
  if (given === undefined) throw new TokenRefused('no token', 401, 'missing bearer token');
  if (auth.tokens !== undefined && tokenMatches(given, auth.tokens())) return;
  if (auth.accessTokens === undefined || !looksLikeJwt(given))
    throw new TokenRefused('unknown token', 401, 'wrong bearer token');
  const namespace = namespaceOf(req, auth.defaultNamespace);
  requireRoleOn(await auth.accessTokens(given), namespace);
}

export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  const log = options.log ?? (() => undefined);
  const origins = new Set(options.corsOrigins);
  const logRefusal = refusalLogger(log);
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const origin = req.headers.origin;
    if (origin !== undefined) {
      // A browser on another origin gets no CORS headers and a refusal.
      if (!origins.has(origin)) throw new HttpError(403, `origin ${origin} is not allowed`);
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Allow-Credentials', 'true');
      res.setHeader('Vary', 'Origin');
    }
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'OPTIONS') {
      res.writeHead(204, {
        'Access-Control-Allow-Methods': 'POST, OPTIONS',
        'Access-Control-Allow-Headers': ALLOWED_HEADERS,
        'Access-Control-Max-Age': '600',
      });
      res.end();
      return;
    }
    if (req.method === 'GET' && path === '/health') return send(res, 200, { ok: true });
    if (options.auth !== undefined) await authorize(req, options.auth);
    if (req.method !== 'POST' || (path !== '/encode' && path !== '/decode'))
      throw new HttpError(404, 'POST /encode or /decode');
    const payloads = await readPayloads(req);
    const result =
      path === '/encode' ? await options.codec.encode(payloads) : await decodeEach(options.codec, payloads, log);
    send(res, 200, { payloads: result.map(toJson) });
  };
  const listener: RequestListener = (req, res) => {
    // One span per request when tracing is on: the route (never the query), the method, the status.
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const route = ['/encode', '/decode', '/health'].includes(path) ? path : 'other';
    const attributes = { 'http.request.method': req.method ?? 'GET', 'http.route': route };
    void inSpan(`${req.method ?? 'GET'} ${route}`, attributes, async (set) => {
      await handle(req, res).catch((err: unknown) => {
        const known = err instanceof HttpError || err instanceof TokenRefused;
        const status = known ? err.status : 500;
        if (status === 500) log(`codec server error: ${(err as Error).message}`);
        if (err instanceof TokenRefused) {
          const detail = err.detail ? ` (${err.detail})` : '';
          logRefusal(err.refusal, `${err.message}${detail}; from ${req.socket.remoteAddress ?? 'unknown'}`);
          if (status === 401) res.setHeader('WWW-Authenticate', 'Bearer');
        }
        send(res, status, { error: known ? err.message : 'internal error' });
      });
      set({ 'http.response.status_code': res.statusCode });
    });
  };
  const server = options.tls ? createHttpsServer(options.tls, listener) : createServer(listener);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? DEFAULT_CODEC_SERVER_PORT, options.host ?? '127.0.0.1', resolve);
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `${options.tls ? 'https' : 'http'}://${address.includes(':') ? `[${address}]` : address}:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return void res.end();
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}
