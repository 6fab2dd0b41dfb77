// The kit of the small HTTP servers (the codec server, the webhook receiver, the metrics endpoint and the
// stand-ins: the OpenID provider, the emulator): listen and close, a bounded body read, one status error
// and its answer, and settings read from argv and the environment one way. Node built-ins only, so the
// stand-ins may use it (the emulator's lint fence lets in this module alone of src/).
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';

/** A refusal: the answer's status and a message safe to send (no secret, no quote of a body). */
export class StatusError extends Error {
  override readonly name = 'StatusError';
  constructor(
    readonly status: number,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

function send(res: ServerResponse, status: number, type: string, text: string): void {
  if (res.destroyed) return;
  if (res.headersSent) return void res.end();
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text) }).end(text);
}

export const sendJson = (res: ServerResponse, status: number, body: unknown): void =>
  send(res, status, 'application/json', JSON.stringify(body));

export const sendText = (res: ServerResponse, status: number, line: string): void =>
  send(res, status, 'text/plain; charset=utf-8', `${line}\n`);

/**
 * The one answer to a failed request: a StatusError's status and message, anything else a 500 that says
 * no more (the caller logs it). `{"error": message}`, or the message as a line of text. Returns the status.
 */
export function sendError(req: IncomingMessage, res: ServerResponse, err: unknown, as: 'json' | 'text' = 'json') {
  const [status, message] = err instanceof StatusError ? [err.status, err.message] : [500, 'internal error'];
  // Refused before its body was read whole (or past its cap): the connection closes instead of draining it.
  // (A request without a body is not yet `complete` while its handler runs synchronously.)
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0;
  if (hasBody && !req.complete && !res.headersSent) res.setHeader('connection', 'close');
  if (as === 'json') sendJson(res, status, { error: message });
  else sendText(res, status, message);
  return status;
}

/**
 * The request's body, at most `maxBytes`: past them a 413, from Content-Length before a byte is read, or
 * once the stream passes the cap (what was read is dropped, nothing more is read). A caller gone is a 400.
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const tooLarge = () => new StatusError(413, `request body over ${maxBytes} bytes`);
  if (Number(req.headers['content-length']) > maxBytes) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) return void chunks.push(chunk);
      req.off('data', onData).pause();
      chunks.length = 0;
      reject(tooLarge());
    };
    const early = (cause?: unknown) => reject(new StatusError(400, 'request body ended early', { cause }));
    // After the end, 'close' is a no-op: the promise has settled.
    req.on('data', onData).once('error', early).once('close', early);
    req.once('end', () => resolve(Buffer.concat(chunks)));
  });
}

export interface Listening {
  /** http(s)://host:port with the host as given (the URL callers use) and the port bound. */
  url: string;
  port: number;
  /** Stops listening and ends every connection, idle keep-alive ones included; resolves once closed. */
  close(): Promise<void>;
}

/** Listens on `port` (0: a free one) of `host` (loopback unless told); rejects with the listen error. */
export async function listen(server: Server | HttpsServer, port: number, host = '127.0.0.1'): Promise<Listening> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject).listen(port, host, () => resolve(void server.off('error', reject)));
  });
  const bound = (server.address() as AddressInfo).port;
  const scheme = server instanceof HttpsServer ? 'https' : 'http';
  return {
    url: `${scheme}://${host.includes(':') ? `[${host}]` : host}:${bound}`,
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A setting's source: a flag (`--port`), a variable (`EMULATOR_PORT`), or a flag with a variable behind it. */
export type Source = string | readonly [flag: string, variable: string];

/**
 * A process's settings: the flags of argv (node:util parseArgs, strict: anything else is the usage line),
 * else the environment ('' counts as unset there). Every problem is one line naming the flag or variable.
 */
export class Settings {
  readonly #flags: Record<string, string | boolean | undefined>;

  /** Flags, if the process takes any: their names and types, and the usage line an unknown one gets. */
  constructor(
    private readonly env: NodeJS.ProcessEnv,
    argv?: { args: readonly string[]; flags: Record<string, 'string' | 'boolean'>; usage: string },
  ) {
    const options = Object.fromEntries(Object.entries(argv?.flags ?? {}).map(([name, type]) => [name, { type }]));
    try {
      this.#flags = parseArgs({ args: [...(argv?.args ?? [])], options, strict: true, allowPositionals: false }).values;
    } catch {
      throw new Error(argv?.usage);
    }
  }

  /** The value and the name it came from, the flag before the variable. */
  #find(source: Source): { name: string; text: string } | undefined {
    for (const name of typeof source === 'string' ? [source] : source) {
      const text = name.startsWith('--') ? this.#flags[name.slice(2)] : this.env[name];
      if (text === '' && name.startsWith('--')) throw new Error(`${name} is empty`);
      if (typeof text === 'string' && text !== '') return { name, text };
    }
  }

  text(source: Source): string | undefined {
    return this.#find(source)?.text;
  }

  /** The value, or one line: `NAME is not set: why`. */
  required(source: Source, why: string): string {
    const found = this.#find(source);
    if (found) return found.text;
    throw new Error(`${typeof source === 'string' ? source : source.join(' or ')} is not set: ${why}`);
  }

  /** Whether a boolean flag (`--no-auth`) was given. */
  has(flag: string): boolean {
    return this.#flags[flag.slice(2)] === true;
  }

  /** A whole number from `min` (default 0) to `max`, `unit` naming what it counts in the error. */
  int(source: Source, fallback: number, { min = 0, max = Infinity, unit = '' } = {}): number {
    const found = this.#find(source);
    if (found === undefined) return fallback;
    const value = Number(found.text);
    if (/^\d+$/.test(found.text) && value >= min && value <= max) return value;
    const range = max === Infinity ? `>= ${min}` : `from ${min} to ${max}`;
    throw new Error(`${found.name} must be a whole number ${unit && `of ${unit} `}${range} (got "${found.text}")`);
  }

  /** A comma list, each item trimmed; empty when unset. */
  list(source: Source): string[] {
    const items = (this.text(source) ?? '').split(',');
    return items.map((item) => item.trim()).filter(Boolean);
  }

  oneOf<T extends string>(source: Source, allowed: readonly T[]): T | undefined {
    const found = this.#find(source);
    if (found === undefined || allowed.includes(found.text as T)) return found?.text as T | undefined;
    throw new Error(`${found.name} must be one of ${allowed.join(', ')} (got "${found.text}")`);
  }
}
