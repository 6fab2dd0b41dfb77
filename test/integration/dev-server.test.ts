// test-lane: parallel
// The project's dev server (scripts/cluster/devserver): what it refuses and how it says so, a file that
// keeps its namespaces and search attributes across a restart, and a clean SIGTERM. The servers of the
// other tests exercise the rest (in memory, through the SDK's test environment).
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { devServerPath } from '../../scripts/tools';
import { freeLoopbackPort } from '../../src/observability/free-port';
import { SEARCH_ATTRIBUTE_REGISTRATION } from '../../src/shared/search-attributes';
import { waitFor } from '../../scripts/wait';

const run = promisify(execFile);

/** The server's exit code and output when it ends by itself (a refused start). */
async function refused(args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    await run(devServerPath(), args, { timeout: 30_000 });
  } catch (err) {
    const failed = err as { code?: number; stderr?: string };
    return { code: failed.code ?? -1, stderr: failed.stderr ?? '' };
  }
  throw new Error(`the dev server accepted ${args.join(' ')}`);
}

function start(args: string[]): { child: ChildProcess; output: () => string } {
  const child = spawn(devServerPath(), ['server', 'start-dev', '--headless', '--log-level', 'error', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  return { child, output: () => output };
}

async function connected(address: string): Promise<Connection> {
  let connection: Connection | undefined;
  await waitFor(
    async () => {
      connection = await Connection.connect({ address, connectTimeout: 1_000 }).catch(() => undefined);
      return connection !== undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100, what: `the dev server at ${address}` },
  );
  return connection!;
}

// TEMPORAL_DEV_SERVER may name another program (a Temporal CLI): its codes and messages are its own.
const skip = process.env.TEMPORAL_DEV_SERVER ? "TEMPORAL_DEV_SERVER is set: this file tests the project's own" : false;

describe('the dev server', { skip }, () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'dev-server-test-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('an unknown flag exits 2 and names it', async () => {
    const { code, stderr } = await refused(['server', 'start-dev', '--no-such-flag']);
    assert.equal(code, 2);
    assert.match(stderr, /unknown flag --no-such-flag \(flags: .*--db-filename/);
  });

  test('a port in use exits 1 with the flag and the bind error', async () => {
    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const { port } = busy.address() as net.AddressInfo;
    try {
      const { code, stderr } = await refused(['--headless', '--port', String(port)]);
      assert.equal(code, 1);
      assert.match(stderr, new RegExp(`--port ${port}: .*address already in use`));
    } finally {
      busy.close();
    }
  });

  test('a database file an older server wrote exits 3 with what it lacks', async () => {
    // An empty file is an SQLite database without any table: as stale as one can be.
    const file = path.join(dir, 'empty.db');
    await writeFile(file, '');
    const { code, stderr } = await refused(['--headless', '--port', String(await freeLoopbackPort()), '-f', file]);
    assert.equal(code, 3);
    assert.match(stderr, /written by an older Temporal server: it lacks .*move it aside/);
  });

  test('a file keeps namespaces and search attributes across a restart; SIGTERM exits 0', async () => {
    const file = path.join(dir, 'kept.db');
    const port = await freeLoopbackPort();
    const address = `127.0.0.1:${port}`;
    const attributes = Object.entries(SEARCH_ATTRIBUTE_REGISTRATION).flatMap(([name, type]) => [
      '--search-attribute',
      `${name}=${type}`,
    ]);
    for (const round of ['new file', 'existing file']) {
      // The second round passes no --search-attribute: they come from the file.
      const server = start([
        '--port',
        String(port),
        '--db-filename',
        file,
        '--namespace',
        'second',
        ...(round === 'new file' ? attributes : []),
      ]);
      const connection = await connected(address);
      try {
        const { namespaces } = await connection.workflowService.listNamespaces({});
        const names = namespaces.map((ns) => ns.namespaceInfo?.name);
        assert.ok(names.includes('default') && names.includes('second'), `${round}: ${names.join(', ')}`);
        const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
        for (const name of Object.keys(SEARCH_ATTRIBUTE_REGISTRATION))
          assert.ok(name in (customAttributes ?? {}), `${round}: ${name} registered`);
        const { serverVersion } = await connection.workflowService.getSystemInfo({});
        assert.match(serverVersion ?? '', /^1\.32\./);
      } finally {
        await connection.close();
      }
      const exited = once(server.child, 'exit');
      server.child.kill('SIGTERM');
      const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
      assert.equal(code, 0, `${round}: exit ${code} ${signal}: ${server.output().slice(-2000)}`);
    }
  });
});
