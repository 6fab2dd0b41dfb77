// A loopback webhook receiver for keeper tests: records the deployment documents POSTed to it.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HookReceiver {
  url: string;
  received: { staticExport: { bundleUrl: string; version?: string } }[];
  /** Requests of any kind that reached it (an attacker's webhook must leave this at 0). */
  hits: () => number;
  close(): Promise<void>;
}

export async function startHookReceiver(): Promise<HookReceiver> {
  const received: HookReceiver['received'] = [];
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST') received.push(JSON.parse(Buffer.concat(chunks).toString() || '{}'));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    hits: () => hits,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
