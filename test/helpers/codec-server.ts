// The codec server as `npm run codec-server` runs it (a process), and the JSON payloads the Web UI
// and `temporal --codec-endpoint` send it, for the codec server's integration tests.
import { execFile, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import type { JWK } from 'jose';
import type { Payload } from '@temporalio/common';
import { freeLoopbackPort } from '../../src/observability/free-port';
import { waitFor } from './temporal';

const ROOT = path.resolve(__dirname, '../..');

export interface Exit {
  code: number;
  stderr: string;
}

/** `npm run codec-server` that is expected to stop: its exit code and stderr. */
export const runCodecServerToExit = (args: string[], env: NodeJS.ProcessEnv): Promise<Exit> =>
  new Promise((resolve) =>
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/codec-server.ts', ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH, ...env }, timeout: 30_000 },
      (err, _stdout, stderr) => resolve({ code: err ? Number(err.code) : 0, stderr }),
    ),
  );

/** A codec server process; resolves once it listens. */
export async function startCodecServerProcess(args: string[], env: NodeJS.ProcessEnv) {
  const port = await freeLoopbackPort();
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/codec-server.ts', '--port', String(port), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await waitFor(() => output.includes('codec server on'), { timeoutMs: 30_000, what: 'the codec server to listen' });
  const url = /codec server on (https?:\/\/\S+) /.exec(output)?.[1] ?? `http://127.0.0.1:${port}`;
  return { child, url, output: () => output };
}

export interface JsonPayload {
  metadata: Record<string, string>;
  data: string;
}

const b64 = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('base64');
export const payloadToJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, b64(v)])),
  data: b64(p.data),
});
export const payloadFromJson = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data, 'base64'),
});

/** A sign-on provider's discovery document and JWKS on loopback: all the codec server reads of it. */
export async function startProviderStandIn(port: number, jwks: { keys: JWK[] }): Promise<Server> {
  const issuer = `http://127.0.0.1:${port}`;
  const server = createServer((req, res) => {
    const body =
      req.url === '/.well-known/openid-configuration'
        ? { issuer, jwks_uri: `${issuer}/jwks` }
        : req.url === '/jwks'
          ? jwks
          : undefined;
    res.writeHead(body ? 200 : 404, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body ?? { error: 'not found' }));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}
