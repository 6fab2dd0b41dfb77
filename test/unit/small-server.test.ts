// test-lane: parallel
// The small servers' kit (src/process/small-server.ts) on loopback: the body cap (refused from
// Content-Length, or once a stream passes it, and then not read on), the one error answer, listen and a
// close that ends keep-alive connections, and settings from argv and the environment.
import assert from 'node:assert/strict';
import { type IncomingMessage, type ServerResponse, Agent, createServer, request } from 'node:http';
import { connect } from 'node:net';
import { after, describe, test } from 'node:test';
import { waitFor } from '../../scripts/wait';
import {
  type Listening,
  listen,
  readBody,
  sendError,
  sendJson,
  Settings,
  StatusError,
} from '../../src/process/small-server';

const CAP = 1024;

/** A server that echoes the body read with the kit (cap CAP), answering refusals with sendError. */
async function echoServer(seen: unknown[] = [], started: IncomingMessage[] = []): Promise<Listening> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    started.push(req);
    readBody(req, CAP).then(
      (body) => sendJson(res, 200, { bytes: body.length }),
      (err: unknown) => {
        seen.push(err);
        sendError(req, res, err);
      },
    );
  });
  return listen(server, 0);
}

/** One raw request: the status, the Connection header and the body of the answer. */
function raw(url: string, headers: Record<string, string>, write: (req: ReturnType<typeof request>) => void) {
  return new Promise<{ status: number; connection: string | undefined; body: string }>((resolve, reject) => {
    // A keep-alive caller: a `Connection: close` in the answer is the server's own choice.
    const agent = new Agent({ keepAlive: true });
    const req = request(url, { method: 'POST', headers, agent }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString())).on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body }));
    });
    req.once('close', () => agent.destroy());
    let answered = false;
    req.once('response', () => (answered = true));
    // The server may close before we finish sending (EPIPE, ECONNRESET): that is the point, if it answered.
    req.on('error', () => undefined).once('close', () => answered || reject(new Error('no answer')));
    req.setTimeout(5_000, () => req.destroy());
    write(req);
  });
}

describe('readBody', () => {
  const servers: Listening[] = [];
  after(() => Promise.all(servers.map((s) => s.close())));

  test('a body within the cap is read whole', async () => {
    const server = await echoServer();
    servers.push(server);
    const res = await fetch(server.url, { method: 'POST', body: 'x'.repeat(CAP) });
    assert.deepEqual([res.status, await res.json()], [200, { bytes: CAP }]);
  });

  test('an announced Content-Length over the cap is a 413 before a byte of the body arrives', async () => {
    const server = await echoServer();
    servers.push(server);
    // One byte of the CAP + 1 announced is sent, and no more: only a refusal from the headers answers.
    const answer = await raw(server.url, { 'content-length': String(CAP + 1) }, (req) => req.write('{'));
    assert.equal(answer.status, 413);
    assert.deepEqual(JSON.parse(answer.body), { error: `request body over ${CAP} bytes` });
    assert.equal(answer.connection, 'close', 'the rest of the body is not drained');
  });

  test('a stream past the cap is a 413 and the connection ends though the caller never stops sending', async () => {
    const server = await echoServer();
    servers.push(server);
    let sent = 0;
    const answer = await raw(server.url, { 'transfer-encoding': 'chunked' }, (req) => {
      const more = () => {
        // An endless body: a server that read on would never answer or close.
        while (!req.destroyed && req.write(Buffer.alloc(256))) sent += 256;
        if (!req.destroyed) req.once('drain', more);
      };
      more();
    });
    assert.equal(answer.status, 413);
    assert.equal(answer.connection, 'close');
    assert.ok(sent > CAP);
  });

  test('a caller gone before the end of its body is a 400 StatusError', async () => {
    const seen: unknown[] = [];
    const started: IncomingMessage[] = [];
    const server = await echoServer(seen, started);
    servers.push(server);
    const socket = connect(server.port, '127.0.0.1');
    socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc');
    await waitFor(() => started.length === 1, { what: 'the partial request' });
    socket.destroy();
    const [err] = await waitFor(() => (seen.length ? seen : null), { what: 'the refusal' });
    assert.ok(err instanceof StatusError);
    assert.deepEqual([err.status, err.message], [400, 'request body ended early']);
  });
});

describe('sendError', () => {
  const servers: Listening[] = [];
  after(() => Promise.all(servers.map((s) => s.close())));

  const failing = async (err: unknown, as?: 'json' | 'text') => {
    const server = await listen(
      createServer((req, res) => void sendError(req, res, err, as)),
      0,
    );
    servers.push(server);
    const res = await fetch(server.url);
    return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
  };

  test('a StatusError answers its status and message, as JSON or as a line of text', async () => {
    assert.deepEqual(await failing(new StatusError(403, 'origin x is not allowed')), {
      status: 403,
      type: 'application/json',
      body: '{"error":"origin x is not allowed"}',
    });
    assert.deepEqual(await failing(new StatusError(401, 'bad signature'), 'text'), {
      status: 401,
      type: 'text/plain; charset=utf-8',
      body: 'bad signature\n',
    });
  });

  test('a refusal of a request without a body keeps its keep-alive connection', async () => {
    const server = await listen(
      createServer((req, res) => void sendError(req, res, new StatusError(404, 'not found'), 'text')),
      0,
    );
    servers.push(server);
    const agent = new Agent({ keepAlive: true });
    try {
      const answer = await new Promise<string | undefined>((resolve, reject) =>
        request(server.url, { agent }, (res) => resolve(res.resume().headers.connection))
          .on('error', reject)
          .end(),
      );
      assert.equal(answer, 'keep-alive');
    } finally {
      agent.destroy();
    }
  });

  test('any other error is a bare 500: its message (which may hold a secret) is not sent', async () => {
    const answer = await failing(new Error('connect to https://user:hunter2@db failed'));
    assert.deepEqual([answer.status, answer.body], [500, '{"error":"internal error"}']);
  });
});

describe('listen and close', () => {
  test('port 0 takes a free port, the URL names the host as given', async () => {
    const server = await listen(createServer(), 0);
    try {
      assert.ok(server.port > 0);
      assert.equal(server.url, `http://127.0.0.1:${server.port}`);
      await assert.rejects(listen(createServer(), server.port), { code: 'EADDRINUSE' });
    } finally {
      await server.close();
    }
  });

  test('close ends keep-alive connections and requests in flight, and resolves', async () => {
    const hanging: ServerResponse[] = [];
    const server = await listen(
      createServer((req, res) => (req.url === '/hang' ? void hanging.push(res) : void res.end('ok'))),
      0,
    );
    const agent = new Agent({ keepAlive: true });
    try {
      assert.equal((await fetchWith(agent, `${server.url}/`)).text, 'ok');
      const inFlight = fetchWith(agent, `${server.url}/hang`).catch((err: Error) => err);
      await waitFor(() => hanging.length === 1, { what: 'the request in flight' });
      await within(server.close(), 'the close');
      assert.ok((await inFlight) instanceof Error, 'the request in flight was cut');
      await assert.rejects(fetch(`${server.url}/`), 'nothing listens any more');
    } finally {
      agent.destroy();
    }
  });
});

/** `promise`, or a failure naming `what` after 5 s (a close that waits on a connection never resolves). */
function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: over 5 s`)), 5_000)),
  );
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

function fetchWith(agent: Agent, url: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    request(url, { agent }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString())).on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    })
      .on('error', reject)
      .end();
  });
}

describe('Settings', () => {
  const USAGE = 'usage: npm run thing [-- --port N] [--host H] [--quiet]';
  const flags = { port: 'string', host: 'string', quiet: 'boolean' } as const;
  const settings = (args: string[], env: Record<string, string> = {}) =>
    new Settings(env, { args, flags, usage: USAGE });
  const refused = (read: () => unknown, message: string) =>
    assert.throws(read, (err: Error) => err.message === message && !message.includes('\n'));

  test('a flag before its variable, the variable before the fallback, an empty variable unset', () => {
    const s = settings(['--port', '8080', '--quiet'], { THING_PORT: '9090', THING_HOST: '' });
    assert.equal(s.int(['--port', 'THING_PORT'], 1), 8080);
    assert.equal(settings([], { THING_PORT: '9090' }).int(['--port', 'THING_PORT'], 1), 9090);
    assert.equal(s.text(['--host', 'THING_HOST']) ?? '127.0.0.1', '127.0.0.1');
    assert.deepEqual([s.has('--quiet'), settings([]).has('--quiet')], [true, false]);
    assert.deepEqual(settings([], { LIST: ' a, b,,c ' }).list('LIST'), ['a', 'b', 'c']);
    assert.equal(settings([], { SHAPE: 'slow' }).oneOf('SHAPE', ['fast', 'slow']), 'slow');
    assert.equal(settings([]).oneOf('SHAPE', ['fast', 'slow']), undefined);
    assert.equal(new Settings({ TTL: '30' }).int('TTL', 900, { min: 1 }), 30, 'the environment alone, no argv');
  });

  test('every problem is one line naming the flag or the variable it came from', () => {
    refused(() => settings(['--prot', '1']), USAGE);
    refused(() => settings(['extra']), USAGE);
    refused(() => settings(['--port']), USAGE);
    refused(
      () => settings(['--port', 'x']).int(['--port', 'THING_PORT'], 1, { max: 65_535 }),
      '--port must be a whole number from 0 to 65535 (got "x")',
    );
    refused(
      () => settings([], { THING_PORT: '70000' }).int(['--port', 'THING_PORT'], 1, { max: 65_535 }),
      'THING_PORT must be a whole number from 0 to 65535 (got "70000")',
    );
    refused(
      () => settings([], { TTL: '1.5' }).int('TTL', 9, { min: 1, unit: 'seconds' }),
      'TTL must be a whole number of seconds >= 1 (got "1.5")',
    );
    refused(() => settings(['--host', '']).text(['--host', 'THING_HOST']), '--host is empty');
    refused(
      () => settings([]).required(['--host', 'THING_HOST'], 'the thing needs a host'),
      '--host or THING_HOST is not set: the thing needs a host',
    );
    refused(
      () => settings([], { SHAPE: 'round' }).oneOf('SHAPE', ['fast', 'slow']),
      'SHAPE must be one of fast, slow (got "round")',
    );
  });
});
