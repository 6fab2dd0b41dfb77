// test-lane: parallel
// Sinks and bundle verification against real files, real processes and a loopback HTTP server: what each
// sink of the worker's file does, and what it refuses (symbolic links, private addresses, the worker's env).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import {
  type ApplyBundleRequest,
  MIRROR_DOCUMENT,
  SinkError,
  applyToSink,
  mirrorFileName,
  writeFileAtomic,
} from '../../src/activities/sinks';
import { type SinkDefinition, checkSink } from '../../src/activities/sinks-file';
import { isPrivateAddress, sinkProblem } from '../../src/activities/sink-guards';
import { BundleError, downloadAndCheck, storageErrorCode } from '../../src/activities/verify';
import { bundleHostRules, parseHostRule } from '../../src/policies/bundle-hosts';
import { type HostileServer, startHostileServer } from '../helpers/hostile-server';
import { waitFor } from '../../scripts/wait';

const ARCHIVE = gzipSync(Buffer.from('index.html\n'.repeat(5_000)));
const SHA = createHash('sha256').update(ARCHIVE).digest('hex');

interface Hit {
  method: string;
  url: string;
  body: string;
  contentType: string | undefined;
}

/** Loopback server: /bundle/* serves ARCHIVE (or variants), /hook records POSTs and answers hookStatus. */
class Fixture {
  server!: Server;
  base = '';
  hits: Hit[] = [];
  hookStatus = 200;
  hookHeaders: Record<string, string | string[] | undefined>[] = [];
  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    this.hits.push({
      method: req.method ?? '',
      url: req.url ?? '',
      body: Buffer.concat(chunks).toString(),
      contentType: req.headers['content-type'],
    });
    const url = new URL(req.url ?? '/', this.base);
    if (url.pathname.startsWith('/hook')) {
      this.hookHeaders.push(req.headers);
      const location = this.hookStatus === 302 ? { location: `${this.base}/hook-redirected` } : {};
      res
        .writeHead(this.hookStatus, { 'content-type': 'text/plain', ...location })
        .end(`ANSWER-BODY status ${this.hookStatus} for ${req.url}`);
    } else if (url.pathname === '/bundle/good.tar.gz') {
      res.writeHead(200).end(ARCHIVE);
    } else if (url.pathname === '/bundle/plain.txt') {
      res.writeHead(200).end('not a gzip archive at all');
    } else if (url.pathname === '/bundle/truncated.tar.gz') {
      res.writeHead(200).end(ARCHIVE.subarray(0, ARCHIVE.length - 20));
    } else if (url.pathname === '/bundle/expired.tar.gz') {
      res.writeHead(403).end('<Error>Request has expired</Error>');
    } else {
      res.writeHead(404).end();
    }
  }
  bundleHits(): number {
    return this.hits.filter((h) => h.url.startsWith('/bundle/')).length;
  }
  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const fx = new Fixture();
let dir: string;

before(async () => {
  await fx.start();
  dir = await fsp.mkdtemp(path.join(tmpdir(), 'sinks-test-'));
});
after(async () => {
  await fx.close();
  await fsp.rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  fx.hits = [];
  fx.hookHeaders = [];
  fx.hookStatus = 200;
});

/** A sink as the worker's file would hold it, with the test directory as the one allowed directory. */
function def(raw: Record<string, unknown>): SinkDefinition {
  const checked = checkSink(raw, [dir]);
  if (typeof checked === 'string') assert.fail(checked);
  return checked;
}

const signed = (name: string) => `${fx.base}/bundle/${name}?X-Amz-Signature=SECRETSIG123&X-Amz-Expires=3600`;

/** The fixture plays the admin API: its host and port are the ones links may be fetched from. */
const hosts = () => bundleHostRules(fx.base, []);

function bundleRequest(overrides: Partial<ApplyBundleRequest> = {}): ApplyBundleRequest {
  return {
    domain: 'docs.example.com',
    sink: 'unused',
    jobId: 'job_1',
    bundleUrl: signed('good.tar.gz'),
    expiresAt: '2030-01-01T00:00:00.000Z',
    sizeBytes: ARCHIVE.length,
    version: null,
    ...overrides,
  };
}

async function rejectsWith<T extends Error>(promise: Promise<unknown>, cls: new (...args: never[]) => T): Promise<T> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof cls, `expected ${cls.name}, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected ${cls.name}, but it resolved`);
}

describe('downloadAndCheck', () => {
  test('a good archive: byte count and sha256', async () => {
    const progress: number[] = [];
    const check = await downloadAndCheck(signed('good.tar.gz'), {
      expectedBytes: ARCHIVE.length,
      hosts: hosts(),
      onProgress: (b) => progress.push(b),
    });
    assert.deepEqual(check, { bytes: ARCHIVE.length, sha256: SHA });
    assert.equal(progress.at(-1), ARCHIVE.length);
  });

  test('a size that differs from sizeBytes is invalid (larger and smaller)', async () => {
    const smaller = await rejectsWith(
      downloadAndCheck(signed('good.tar.gz'), { expectedBytes: ARCHIVE.length - 1, hosts: hosts() }),
      BundleError,
    );
    assert.equal(smaller.code, 'BundleInvalid');
    assert.match(smaller.message, /larger than its sizeBytes/);
    const larger = await rejectsWith(
      downloadAndCheck(signed('good.tar.gz'), { expectedBytes: ARCHIVE.length + 1, hosts: hosts() }),
      BundleError,
    );
    assert.match(larger.message, new RegExp(`is ${ARCHIVE.length} bytes, but sizeBytes says ${ARCHIVE.length + 1}`));
    assert.equal(larger.retryable, false);
  });

  test('not gzip, or a corrupt gzip stream, is invalid', async () => {
    const plain = await rejectsWith(
      downloadAndCheck(signed('plain.txt'), { expectedBytes: 25, hosts: hosts() }),
      BundleError,
    );
    assert.match(plain.message, /not a gzip archive/);
    const truncated = await rejectsWith(
      downloadAndCheck(signed('truncated.tar.gz'), { expectedBytes: ARCHIVE.length - 20, hosts: hosts() }),
      BundleError,
    );
    assert.equal(truncated.code, 'BundleInvalid');
    assert.match(truncated.message, /corrupt gzip/);
  });

  test('an expired link is unavailable, and no message carries the signature', async () => {
    const err = await rejectsWith(
      downloadAndCheck(signed('expired.tar.gz'), { expectedBytes: 10, hosts: hosts() }),
      BundleError,
    );
    assert.equal(err.code, 'BundleUnavailable');
    assert.match(err.message, /HTTP 403 \(expired or revoked link\)/);
    assert.doesNotMatch(err.message, /SECRETSIG123/);
    const refused = await rejectsWith(
      downloadAndCheck('http://127.0.0.1:1/x.tar.gz?sig=SECRETSIG123', {
        expectedBytes: 10,
        hosts: [parseHostRule('127.0.0.1:1')],
      }),
      BundleError,
    );
    assert.equal(refused.retryable, true);
    assert.doesNotMatch(refused.message, /SECRETSIG123/);
  });
});

describe('bundle downloads: only allowed hosts, and error answers never quoted', () => {
  let attacker: HostileServer;
  let storage: HostileServer;
  const SECRET_BODY = 'postgres://app:hunter2@db/x';
  const MB = 1024 * 1024;

  before(async () => {
    attacker = await startHostileServer({ '/': { status: 200, body: 'the attacker was reached' } });
    storage = await startHostileServer({
      '/redirect': { status: 302, location: `${attacker.url}/stolen` },
      '/leaky': { status: 401, body: SECRET_BODY },
      '/denied': { status: 403, body: `<Error><Code>AccessDenied</Code><Message>${SECRET_BODY}</Message></Error>` },
      '/huge': { status: 500, streamBytes: 40 * MB, prefix: SECRET_BODY },
    });
  });
  after(async () => {
    await attacker?.close();
    await storage?.close();
  });
  const link = (server: HostileServer, name: string) => `${server.url}${name}?X-Amz-Signature=SECRETSIG123`;
  const fromStorage = (name: string) =>
    rejectsWith(
      downloadAndCheck(link(storage, name), { expectedBytes: 10, hosts: bundleHostRules(storage.url, []) }),
      BundleError,
    );

  test('a host or port the rules do not allow is refused before any connection, named by host only', async () => {
    const port = new URL(fx.base).port;
    const cases: [string, string][] = [
      [link(attacker, '/bundle/j.tar.gz'), new URL(attacker.url).host],
      ['http://169.254.169.254/latest/meta-data/?X-Amz-Signature=SECRETSIG123', '169.254.169.254'],
      [`http://localhost:${port}/bundle/good.tar.gz?X-Amz-Signature=SECRETSIG123`, `localhost:${port}`],
    ];
    for (const [url, host] of cases) {
      const err = await rejectsWith(downloadAndCheck(url, { expectedBytes: 10, hosts: hosts() }), BundleError);
      assert.equal(err.code, 'BundleRefused', url);
      assert.equal(err.retryable, false);
      assert.equal(
        err.message,
        `bundle link refused: host ${host} is neither the admin API's nor listed in BUNDLE_ALLOWED_HOSTS`,
      );
    }
    const mirrored = await rejectsWith(
      applyToSink(
        def({ type: 'mirror', dir: path.join(dir, 'mirror-refused'), urlPrefix: 'https://m.internal/' }),
        bundleRequest({ bundleUrl: link(attacker, '/bundle/j.tar.gz') }),
        { bundleHosts: hosts() },
      ),
      BundleError,
    );
    assert.equal(mirrored.code, 'BundleRefused');
    assert.deepEqual(await fsp.readdir(path.join(dir, 'mirror-refused')), [], 'no partial file');
    assert.deepEqual(attacker.hits, [], 'the attacker saw no request');
    assert.equal(fx.hits.length, 0);
  });

  test('a redirect is not followed: where it points sees nothing, and the same link is not tried again', async () => {
    const err = await fromStorage('/redirect');
    assert.equal(err.code, 'BundleUnavailable');
    assert.equal(err.retryable, false);
    assert.match(err.message, /answered HTTP 302 \(a redirect: not followed\)$/);
    assert.deepEqual(attacker.hits, []);
  });

  test('an error body is never quoted: a credential in it stays out, a storage error code comes through', async () => {
    const leaky = await fromStorage('/leaky');
    assert.equal(leaky.message, `bundle link ${storage.url}/leaky answered HTTP 401`);
    const denied = await fromStorage('/denied');
    assert.equal(
      denied.message,
      `bundle link ${storage.url}/denied answered HTTP 403 (expired or revoked link, AccessDenied)`,
    );
    for (const { message } of [leaky, denied]) assert.doesNotMatch(message, /hunter2|postgres|SECRETSIG123/);
    assert.equal(storageErrorCode('<Error><Code>ExpiredToken</Code></Error>'), 'ExpiredToken');
    assert.equal(storageErrorCode('<Code>postgres://app:hunter2@db</Code>'), undefined);
    assert.equal(storageErrorCode('<Code>Access Denied</Code>'), undefined);
  });

  test('a 40 MB error body is read only to a few KB: the server gets a fraction of it written', async () => {
    const before = storage.written.length;
    const err = await fromStorage('/huge');
    await waitFor(() => storage.written.length > before, { what: 'the huge answer to end' });
    // Kernel buffers on loopback take a few MB before the client closes; reading it all is 40.
    const { bytes } = storage.written.at(-1)!;
    assert.ok(bytes < 16 * MB, `${bytes} bytes written`);
    assert.equal(err.message, `bundle link ${storage.url}/huge answered HTTP 500`);
    assert.equal(err.retryable, true);
  });
});

describe('file sink', () => {
  test('writes the deployment document 0600 (or the mode it sets); version only when pinned', async () => {
    const file = path.join(dir, 'nested', 'deploy.json');
    const result = await applyToSink(def({ type: 'file', path: file }), bundleRequest());
    assert.deepEqual(JSON.parse(await fsp.readFile(file, 'utf8')), {
      staticExport: { enabled: true, bundleUrl: signed('good.tar.gz') },
    });
    assert.equal((await fsp.stat(file)).mode & 0o777, 0o600);
    assert.deepEqual(result, {
      sink: 'file',
      appliedUrl: signed('good.tar.gz'),
      appliedExpiresAt: '2030-01-01T00:00:00.000Z',
    });
    await applyToSink(def({ type: 'file', path: file, mode: '0640' }), bundleRequest({ version: 'v7' }));
    assert.equal(JSON.parse(await fsp.readFile(file, 'utf8')).staticExport.version, 'v7');
    assert.equal((await fsp.stat(file)).mode & 0o777, 0o640);
  });

  test('never through a symbolic link: as the file, or as a directory on the way', async () => {
    const outside = await fsp.mkdtemp(path.join(tmpdir(), 'sinks-outside-'));
    try {
      await fsp.writeFile(path.join(outside, 'victim.json'), 'UNTOUCHED');
      await fsp.symlink(path.join(outside, 'victim.json'), path.join(dir, 'link.json'));
      await fsp.symlink(outside, path.join(dir, 'linked-dir'));
      for (const file of [path.join(dir, 'link.json'), path.join(dir, 'linked-dir', 'victim.json')]) {
        const sink = def({ type: 'file', path: file });
        assert.match((await sinkProblem(sink))!.problem, /symbolic link/);
        const err = await rejectsWith(applyToSink(sink, bundleRequest()), SinkError);
        assert.match(err.message, /symbolic link/);
        assert.equal(err.retryable, false);
      }
      assert.equal(await fsp.readFile(path.join(outside, 'victim.json'), 'utf8'), 'UNTOUCHED');
      assert.deepEqual(await fsp.readdir(outside), ['victim.json']);
    } finally {
      await fsp.rm(outside, { recursive: true, force: true });
    }
  });

  test('the last good file stays when a write fails, and no temporary file is left', async () => {
    const file = path.join(dir, 'atomic', 'deploy.json');
    await writeFileAtomic(file, 'GOOD\n');
    const failingWrite = {
      async writeFile(tmp: string, data: string) {
        await fsp.writeFile(tmp, data.slice(0, 3)); // a partial write, then the disk is full
        throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
      },
      rename: (a: string, b: string) => fsp.rename(a, b),
      rm: (f: string) => fsp.rm(f, { force: true }),
    };
    const err = await rejectsWith(writeFileAtomic(file, 'NEW CONTENT\n', 0o600, failingWrite), SinkError);
    assert.match(err.message, /ENOSPC/);
    const failingRename = {
      ...failingWrite,
      writeFile: (f: string, d: string) => fsp.writeFile(f, d),
      rename: () => Promise.reject(new Error('EXDEV')),
    };
    await rejectsWith(writeFileAtomic(file, 'NEW CONTENT\n', 0o600, failingRename), SinkError);
    assert.equal(await fsp.readFile(file, 'utf8'), 'GOOD\n');
    assert.deepEqual(await fsp.readdir(path.dirname(file)), ['deploy.json']);
  });
});

describe('webhook sink', () => {
  const hook = (extra: Record<string, unknown> = {}) =>
    def({
      type: 'webhook',
      url: `${fx.base}/hook?token=HOOKSECRET`,
      allowHttp: true,
      allowPrivateHosts: ['127.0.0.1'],
      ...extra,
    });

  test('POSTs the document as JSON, with the headers of its secret file', async () => {
    const headersFile = path.join(dir, 'hook-headers.yaml');
    await fsp.writeFile(headersFile, 'Authorization: Bearer HEADERSECRET\n');
    const result = await applyToSink(hook({ headersFile }), bundleRequest({ version: 'v2' }));
    assert.equal(result.appliedUrl, signed('good.tar.gz'));
    assert.equal(fx.hits.length, 1);
    assert.equal(fx.hits[0]!.method, 'POST');
    assert.equal(fx.hits[0]!.contentType, 'application/json');
    assert.equal(fx.hookHeaders[0]!.authorization, 'Bearer HEADERSECRET');
    assert.deepEqual(JSON.parse(fx.hits[0]!.body), {
      staticExport: { enabled: true, bundleUrl: signed('good.tar.gz'), version: 'v2' },
    });
  });

  test('non-2xx fails with its status code only: 5xx retryable, 4xx not, a redirect not followed', async () => {
    const failures: SinkError[] = [];
    for (const status of [503, 400, 302]) {
      fx.hookStatus = status;
      const err = await rejectsWith(applyToSink(hook(), bundleRequest()), SinkError);
      assert.match(err.message, new RegExp(`HTTP ${status}$`));
      failures.push(err);
    }
    assert.deepEqual(
      failures.map((f) => f.retryable),
      [true, false, false],
    );
    assert.equal(fx.hits.filter((h) => h.url.startsWith('/hook-redirected')).length, 0);
    for (const { message } of failures) assert.doesNotMatch(message, /HOOKSECRET|SECRETSIG123|ANSWER-BODY/);
  });

  test('loopback, private and metadata addresses are refused unless the sink lists the host; http needs allowHttp', async () => {
    const cases = [
      { url: `${fx.base}/hook`, allowHttp: true },
      { url: `http://localhost:${new URL(fx.base).port}/hook`, allowHttp: true },
      { url: 'http://169.254.169.254/latest/meta-data/', allowHttp: true },
      { url: 'https://10.1.2.3/hook' },
      { url: 'https://[::1]/hook' },
    ];
    for (const raw of cases) {
      const sink = def({ type: 'webhook', ...raw });
      assert.match((await sinkProblem(sink))!.problem, /loopback, private, link-local or metadata/);
      const err = await rejectsWith(applyToSink(sink, bundleRequest()), SinkError);
      assert.match(err.message, /refused: .*allowPrivateHosts/);
      assert.equal(err.retryable, false);
    }
    assert.equal(fx.hits.length, 0, 'nothing connected');
    assert.match(checkSink({ type: 'webhook', url: 'http://hooks.example.com/x' }, [dir]) as string, /https/);
    assert.deepEqual(
      [
        '8.8.8.8',
        '127.0.0.1',
        '10.0.0.1',
        '172.20.0.1',
        '192.168.1.1',
        '169.254.169.254',
        '100.100.100.200',
        '::1',
        'fd00:ec2::254',
        '::ffff:127.0.0.1',
        '2606:4700::1',
      ].map(isPrivateAddress),
      [false, true, true, true, true, true, true, true, true, true, false],
    );
  });
});

describe('command sink', () => {
  test('an argv, no shell; its environment is PATH, HOME, the names it lists and STATIC_EXPORT_*, the document on stdin', async () => {
    const out = path.join(dir, 'cmd');
    await fsp.mkdir(out, { recursive: true });
    const script = `const fs = require('fs'); fs.writeFileSync(process.argv[1], fs.readFileSync(0)); fs.writeFileSync(process.argv[2], JSON.stringify(process.env));`;
    const sink = def({
      type: 'command',
      argv: [process.execPath, '-e', script, `${out}/stdin.json`, `${out}/env.json`, `; touch ${out}/injected`],
      env: ['KUBECONFIG'],
    });
    const result = await applyToSink(sink, bundleRequest({ version: 'v3' }), {
      env: {
        PATH: '/usr/bin',
        HOME: '/home/w',
        KUBECONFIG: '/k/config',
        ADMIN_API_KEY: 'mint_no',
        TEMPORAL_API_KEY: 't',
      },
    });
    assert.equal(result.sink, 'command');
    assert.deepEqual(JSON.parse(await fsp.readFile(`${out}/stdin.json`, 'utf8')), {
      staticExport: { enabled: true, bundleUrl: signed('good.tar.gz'), version: 'v3' },
    });
    const env = JSON.parse(await fsp.readFile(`${out}/env.json`, 'utf8'));
    assert.deepEqual(env, {
      PATH: '/usr/bin',
      HOME: '/home/w',
      KUBECONFIG: '/k/config',
      STATIC_EXPORT_BUNDLE_URL: signed('good.tar.gz'),
      STATIC_EXPORT_VERSION: 'v3',
      STATIC_EXPORT_JOB_ID: 'job_1',
      STATIC_EXPORT_EXPIRES_AT: '2030-01-01T00:00:00.000Z',
      STATIC_EXPORT_DOMAIN: 'docs.example.com',
    });
    await assert.rejects(fsp.stat(`${out}/injected`), 'no shell ran the argument');
    assert.match(
      checkSink({ type: 'command', argv: ['x'], env: ['ADMIN_API_KEY_FILE'] }, [dir]) as string,
      /own secrets/,
    );
    assert.match(checkSink({ type: 'command', command: 'helm upgrade' }, [dir]) as string, /unknown field/);
  });

  test('a non-zero exit fails with a short, redacted stderr tail', async () => {
    const script = `process.stderr.write('x'.repeat(5000) + ' Error: UPGRADE FAILED for ' + process.env.STATIC_EXPORT_BUNDLE_URL + ' with Bearer abc.def mint_leaked_key ' + process.env.KUBECONFIG); process.exit(3)`;
    const sink = def({ type: 'command', argv: [process.execPath, '-e', script], env: ['KUBECONFIG'] });
    const err = await rejectsWith(
      applyToSink(sink, bundleRequest(), { env: { PATH: process.env.PATH, KUBECONFIG: 'kube-secret-path' } }),
      SinkError,
    );
    assert.match(err.message, /exited with code 3/);
    assert.match(err.message, /UPGRADE FAILED/);
    assert.match(err.message, /\/bundle\/good\.tar\.gz/);
    assert.ok(err.message.length < 400, `short: ${err.message.length}`);
    assert.doesNotMatch(err.message, /SECRETSIG123|abc\.def|mint_leaked_key|kube-secret-path/);
  });

  test('a command that ignores its stdin still succeeds', async () => {
    // It exits before reading the document: the write to its closed stdin must not fail the apply.
    const ran = path.join(dir, 'ignored-stdin-ran');
    const sink = def({
      type: 'command',
      argv: [process.execPath, '-e', `require('fs').writeFileSync('${ran}', 'ran')`],
    });
    const result = await applyToSink(sink, bundleRequest());
    assert.equal(result.sink, 'command');
    assert.equal(await fsp.readFile(ran, 'utf8'), 'ran');
  });
});

describe('mirror sink', () => {
  const mirror = (sub: string, urlPrefix = 'https://mirror.internal/docs/') =>
    def({ type: 'mirror', dir: path.join(dir, sub), urlPrefix });
  const applyMirror = (sink: SinkDefinition, req: ApplyBundleRequest) =>
    applyToSink(sink, req, { bundleHosts: hosts() });

  test('retention keeps the newest applies even when an older archive carries a later mtime', async () => {
    const sink = mirror('mirror-clock');
    await applyMirror(sink, bundleRequest({ jobId: 'job_1' }));
    // An mtime ahead of the kernel's clock (a reuse stamped from Date.now(), or a clock step back).
    const ahead = new Date(Date.now() + 60_000);
    await fsp.utimes(path.join(dir, 'mirror-clock', mirrorFileName('docs.example.com', 'job_1')), ahead, ahead);
    // Several in a row: each stamp must read back strictly newer than the last (a Date-set mtime can
    // read back a fraction of a microsecond below what was set).
    const later = ['job_2', 'job_3', 'job_4', 'job_5', 'job_6', 'job_7', 'job_8'];
    for (const jobId of later) await applyMirror(sink, bundleRequest({ jobId }));
    const archives = (await fsp.readdir(path.join(dir, 'mirror-clock'))).filter((n) => n.endsWith('.tar.gz')).sort();
    assert.deepEqual(
      archives,
      later.slice(-3).map((j) => mirrorFileName('docs.example.com', j)),
    );
  });

  test('copies a checksummed archive 0600, serves a stable URL, keeps the last 3 and skips re-downloads', async () => {
    const mirrorDir = path.join(dir, 'mirror');
    const sink = mirror('mirror');
    const first = await applyMirror(sink, bundleRequest({ jobId: 'job_1' }));
    const name1 = mirrorFileName('docs.example.com', 'job_1');
    assert.deepEqual(first, {
      sink: 'mirror',
      appliedUrl: `https://mirror.internal/docs/${name1}`,
      appliedExpiresAt: null,
      sha256: SHA,
    });
    assert.deepEqual(await fsp.readFile(path.join(mirrorDir, name1)), ARCHIVE);
    assert.equal((await fsp.stat(path.join(mirrorDir, name1))).mode & 0o777, 0o600);
    assert.equal((await fsp.stat(path.join(mirrorDir, MIRROR_DOCUMENT))).mode & 0o777, 0o600);
    assert.equal(await fsp.readFile(path.join(mirrorDir, `${name1}.sha256`), 'utf8'), `${SHA}  ${name1}\n`);
    assert.deepEqual(JSON.parse(await fsp.readFile(path.join(mirrorDir, MIRROR_DOCUMENT), 'utf8')), {
      staticExport: { enabled: true, bundleUrl: first.appliedUrl },
    });
    assert.equal(fx.bundleHits(), 1);

    // A refresh of the same job: the intact copy is reused, nothing is downloaded.
    const again = await applyMirror(sink, bundleRequest({ jobId: 'job_1' }));
    assert.equal(again.appliedUrl, first.appliedUrl);
    assert.equal(fx.bundleHits(), 1);

    for (const jobId of ['job_2', 'job_3', 'job_4']) await applyMirror(sink, bundleRequest({ jobId, version: 'v9' }));
    const archives = (await fsp.readdir(mirrorDir)).filter((n) => n.endsWith('.tar.gz')).sort();
    assert.deepEqual(
      archives,
      ['job_2', 'job_3', 'job_4'].map((j) => mirrorFileName('docs.example.com', j)),
    );
    assert.ok(!(await fsp.readdir(mirrorDir)).includes(`${name1}.sha256`));
    const doc = JSON.parse(await fsp.readFile(path.join(mirrorDir, MIRROR_DOCUMENT), 'utf8'));
    assert.deepEqual(doc, {
      staticExport: {
        enabled: true,
        bundleUrl: `https://mirror.internal/docs/${mirrorFileName('docs.example.com', 'job_4')}`,
        version: 'v9',
      },
    });
  });

  test('a bad bundle never replaces the mirrored document, and leaves no partial file', async () => {
    const mirrorDir = path.join(dir, 'mirror-bad');
    const sink = mirror('mirror-bad', 'https://mirror.internal/docs');
    const good = await applyMirror(sink, bundleRequest({ jobId: 'job_ok' }));
    const before = await fsp.readFile(path.join(mirrorDir, MIRROR_DOCUMENT), 'utf8');
    await rejectsWith(
      applyMirror(
        sink,
        bundleRequest({ jobId: 'job_bad', bundleUrl: signed('truncated.tar.gz'), sizeBytes: ARCHIVE.length - 20 }),
      ),
      BundleError,
    );
    await rejectsWith(
      applyMirror(sink, bundleRequest({ jobId: 'job_bad', sizeBytes: ARCHIVE.length + 5 })),
      BundleError,
    );
    assert.equal(await fsp.readFile(path.join(mirrorDir, MIRROR_DOCUMENT), 'utf8'), before);
    assert.ok(before.includes(good.appliedUrl));
    assert.deepEqual(
      (await fsp.readdir(mirrorDir)).sort(),
      [
        MIRROR_DOCUMENT,
        mirrorFileName('docs.example.com', 'job_ok'),
        `${mirrorFileName('docs.example.com', 'job_ok')}.sha256`,
      ].sort(),
    );
  });
});
