// A loopback HTTP server playing a host that answers downloads badly on purpose: an error whose body
// holds a credential, a huge error body, a redirect elsewhere. It records every request (an attacker's
// server must see none) and, for each answer, how many bytes it got written before the client closed.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * How a path prefix answers: a status with a body; a status with `prefix` and filler up to `streamBytes`
 * (with `hold`, announced as twice that and never ended: only a reader that stops early gets done); a redirect.
 */
export type HostileAnswer =
  | { status: number; body: string }
  | { status: number; streamBytes: number; prefix?: string; hold?: boolean }
  | { status: 301 | 302 | 307 | 308; location: string };

export interface HostileServer {
  url: string;
  /** Paths (with query) of every request that reached it. */
  hits: string[];
  /** Each finished answer: its request's path and the bytes that reached the socket before it closed. */
  written: { url: string; bytes: number }[];
  close(): Promise<void>;
}

const FILLER = Buffer.alloc(64 * 1024, 'x');

/** Writes `total` bytes as fast as the client reads them (then ends, unless `hold`); stops when the client goes away. */
function stream(res: ServerResponse, total: number, prefix: string, hold: boolean): void {
  let sent = Buffer.byteLength(prefix);
  res.write(prefix);
  const pump = (): void => {
    while (sent < total && !res.destroyed) {
      const chunk = FILLER.subarray(0, Math.min(FILLER.length, total - sent));
      sent += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', pump);
    }
    if (!hold) res.end();
  };
  pump();
}

/** Starts the server; `answers` maps a path prefix to its answer (the longest prefix wins), others get 404. */
export async function startHostileServer(answers: Record<string, HostileAnswer>): Promise<HostileServer> {
  const hits: string[] = [];
  const written: HostileServer['written'] = [];
  const prefixes = Object.keys(answers).sort((a, b) => b.length - a.length);
  const server = createServer((req, res) => {
    hits.push(req.url ?? '');
    const socket = req.socket;
    const before = socket.bytesWritten;
    res.on('close', () => written.push({ url: req.url ?? '', bytes: socket.bytesWritten - before }));
    const prefix = prefixes.find((p) => (req.url ?? '').startsWith(p));
    const answer = prefix === undefined ? { status: 404, body: 'not found' } : answers[prefix]!;
    if ('location' in answer) return void res.writeHead(answer.status, { location: answer.location }).end();
    if ('body' in answer) return void res.writeHead(answer.status, { 'content-type': 'text/plain' }).end(answer.body);
    const length = answer.hold ? 2 * answer.streamBytes : answer.streamBytes;
    res.writeHead(answer.status, { 'content-type': 'text/plain', 'content-length': length });
    stream(res, answer.streamBytes, answer.prefix ?? '', answer.hold ?? false);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    written,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
