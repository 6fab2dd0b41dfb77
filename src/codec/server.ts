// The codec server for people: the Temporal Web UI (its `codec.endpoint`) and `temporal
// --codec-endpoint` POST payloads to /decode (and /encode) and show what comes back, so a person reads
// decoded inputs and results while Temporal stores ciphertext. Who is let in (CORS origins, bearer
// tokens or the sign-on provider's, oidc-tokens.ts) and what it answers: docs/contract.md, under
// "Security". Payloads carry no namespace and one key set decrypts whatever it encrypted, so the server
// serves only the namespaces whose workers hold its keys: a request naming another is refused whatever
// its token, and a role counts only on the namespace the request names. The body is read only for a
// caller let in, to a cap, and checked whole (payloads-json.ts) before anything is decoded.
import { type IncomingMessage, type RequestListener, type ServerResponse, createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { inSpan } from '../observability/tracing';
import { type Listening, listen, readBody, sendError, sendJson, StatusError } from '../process/small-server';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { isEncrypted } from './encryption-codec';
import { bearerToken, tokenMatches } from './token-file';
import { looksLikeJwt, requireRoleOn, TokenRefused, type VerifiedToken } from './oidc-tokens';
import { refusalLogger } from './refusal-log';
import { BadPayloads, payloadsOfRequest, payloadToJson } from './payloads-json';

export const DEFAULT_CODEC_SERVER_PORT = 8634;
/** Temporal caps a payload at 2 MB by default; a request holds one Payloads field, base64 in JSON. */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;
// What the Web UI's browser code sends (ui-server 2.42 and 2.54, codec.passAccessToken): Authorization-Extras
// carries the person's ID token beside the access token; a preflight that left it out fails the call.
const ALLOWED_HEADERS = 'Content-Type, X-Namespace, Authorization, Authorization-Extras';
const PREFLIGHT_HEADERS = {
  'Access-Control-Allow-Methods': 'POST, OPTIONS',
  'Access-Control-Allow-Headers': ALLOWED_HEADERS,
  'Access-Control-Max-Age': '600',
};
/** Temporal's namespace names; anything else in X-Namespace is refused before it reaches a message. */
const NAMESPACE_FORM = /^[\w.-]{1,255}$/;

export const isNamespaceName = (value: string): boolean => NAMESPACE_FORM.test(value);

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
   * The namespaces whose payloads `codec`'s keys are for. A request that names another is refused (403)
   * whatever its token: the keys would decrypt that namespace's payloads as readily as these.
   */
  namespaces: readonly string[];
  /** The namespace of a request without X-Namespace (the temporal CLI sends none); one of `namespaces`. */
  defaultNamespace: string;
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
}

export type CodecServer = Listening;

async function readPayloads(req: IncomingMessage): Promise<Payload[]> {
  const text = (await readBody(req, MAX_BODY_BYTES)).toString('utf8');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new StatusError(400, 'request body is not JSON');
  }
  try {
    return payloadsOfRequest(body);
  } catch (err) {
    throw err instanceof BadPayloads ? new StatusError(400, err.message) : err;
  }
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
  if (typeof header !== 'string' || !isNamespaceName(header))
    throw new StatusError(400, 'X-Namespace is not a namespace name');
  return header;
}

/** Who called: a token of the file (it holds no roles) or a sign-on access token (its roles count). */
type Caller = { kind: 'token file' } | { kind: 'sign-on'; token: VerifiedToken };

/** The caller the auth lets in; throws TokenRefused (401/503) otherwise. */
async function authenticate(req: IncomingMessage, auth: CodecServerAuth): Promise<Caller> {
  const given = bearerToken(req.headers.authorization);
  if (given === undefined) throw new TokenRefused('no token', 401, 'missing bearer token');
  if (auth.tokens !== undefined && tokenMatches(given, auth.tokens())) return { kind: 'token file' };
  if (auth.accessTokens === undefined || !looksLikeJwt(given))
    throw new TokenRefused('unknown token', 401, 'wrong bearer token');
  return { kind: 'sign-on', token: await auth.accessTokens(given) };
}

/**
 * Refuses a request for a namespace this server does not serve (403, whatever the token), and a sign-on
 * token without a role on the namespace the request names.
 */
function namespaceGate(
  { namespaces, defaultNamespace }: Pick<CodecServerOptions, 'namespaces' | 'defaultNamespace'>,
  logRefusal: (refusal: string, detail: string) => void,
): (req: IncomingMessage, caller: Caller | undefined) => void {
  const served = new Set(namespaces);
  const servedList = `namespace${served.size === 1 ? '' : 's'} ${[...served].join(', ')}`;
  return (req, caller) => {
    const namespace = namespaceOf(req, defaultNamespace);
    if (!served.has(namespace)) {
      logRefusal('namespace not served', `${namespace}; from ${req.socket.remoteAddress ?? 'unknown'}`);
      throw new StatusError(403, `this codec server serves ${servedList}, not ${namespace}`);
    }
    if (caller?.kind === 'sign-on') requireRoleOn(caller.token, namespace);
  };
}

export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  const log = options.log ?? (() => undefined);
  const origins = new Set(options.corsOrigins);
  const logRefusal = refusalLogger(log);
  const admit = namespaceGate(options, logRefusal);
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const origin = req.headers.origin;
    if (origin !== undefined) {
      // A browser on another origin gets no CORS headers and a refusal.
      if (!origins.has(origin)) throw new StatusError(403, `origin ${origin} is not allowed`);
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Allow-Credentials', 'true');
      res.setHeader('Vary', 'Origin');
    }
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'OPTIONS') return void res.writeHead(204, PREFLIGHT_HEADERS).end();
    if (req.method === 'GET' && path === '/health') return sendJson(res, 200, { ok: true });
    const caller = options.auth && (await authenticate(req, options.auth));
    if (req.method !== 'POST' || (path !== '/encode' && path !== '/decode'))
      throw new StatusError(404, 'POST /encode or /decode');
    admit(req, caller);
    const payloads = await readPayloads(req);
    const result =
      path === '/encode' ? await options.codec.encode(payloads) : await decodeEach(options.codec, payloads, log);
    sendJson(res, 200, { payloads: result.map(payloadToJson) });
  };
  const listener: RequestListener = (req, res) => {
    // One span per request when tracing is on: the route (never the query), the method, the status.
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const route = ['/encode', '/decode', '/health'].includes(path) ? path : 'other';
    const attributes = { 'http.request.method': req.method ?? 'GET', 'http.route': route };
    void inSpan(`${req.method ?? 'GET'} ${route}`, attributes, async (set) => {
      await handle(req, res).catch((err: unknown) => {
        if (!(err instanceof StatusError)) log(`codec server error: ${(err as Error).message}`);
        if (err instanceof TokenRefused) {
          const detail = err.detail ? ` (${err.detail})` : '';
          logRefusal(err.refusal, `${err.message}${detail}; from ${req.socket.remoteAddress ?? 'unknown'}`);
          if (err.status === 401) res.setHeader('WWW-Authenticate', 'Bearer');
        }
        sendError(req, res, err);
      });
      set({ 'http.response.status_code': res.statusCode });
    });
  };
  const server = options.tls ? createHttpsServer(options.tls, listener) : createServer(listener);
  return listen(server, options.port ?? DEFAULT_CODEC_SERVER_PORT, options.host);
}
