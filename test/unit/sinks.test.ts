// test-lane: parallel
// Sinks and bundle verification against real files, a real shell and a loopback HTTP server.
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
import { BundleError, downloadAndCheck } from '../../src/activities/verify';
import { sinkProblems } from '../../src/policies/validation/deployment';

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
      res.writeHead(this.hookStatus, { 'content-type': 'text/plain' }).end(`status ${this.hookStatus} for ${req.url}`);
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
  fx.hookStatus = 200;
});

const signed = (name: string) => `${fx.base}/bundle/${name}?X-Amz-Signature=SECRETSIG123&X-Amz-Expires=3600`;

function bundleRequest(overrides: Partial<ApplyBundleRequest> = {}): ApplyBundleRequest {
  return {
    domain: 'docs.example.com',
    sink: { type: 'file', path: path.join(dir, 'unused.json') },
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
      onProgress: (b) => progress.push(b),
    });
    assert.deepEqual(check, { bytes: ARCHIVE.length, sha256: SHA });
    assert.equal(progress.at(-1), ARCHIVE.length);
  });

  test('a size that differs from sizeBytes is invalid (larger and smaller)', async () => {
    const smaller = await rejectsWith(
      downloadAndCheck(signed('good.tar.gz'), { expectedBytes: ARCHIVE.length - 1 }),
      BundleError,
    );
    assert.equal(smaller.code, 'BundleInvalid');
    assert.match(smaller.message, /larger than its sizeBytes/);
    const larger = await rejectsWith(
      downloadAndCheck(signed('good.tar.gz'), { expectedBytes: ARCHIVE.length + 1 }),
      BundleError,
    );
    assert.match(larger.message, new RegExp(`is ${ARCHIVE.length} bytes, but sizeBytes says ${ARCHIVE.length + 1}`));
    assert.equal(larger.retryable, false);
  });

  test('not gzip, or a corrupt gzip stream, is invalid', async () => {
    const plain = await rejectsWith(downloadAndCheck(signed('plain.txt'), { expectedBytes: 25 }), BundleError);
    assert.match(plain.message, /not a gzip archive/);
    const truncated = await rejectsWith(
      downloadAndCheck(signed('truncated.tar.gz'), { expectedBytes: ARCHIVE.length - 20 }),
      BundleError,
    );
    assert.equal(truncated.code, 'BundleInvalid');
    assert.match(truncated.message, /corrupt gzip/);
  });

  test('an expired link is unavailable, and no message carries the signature', async () => {
    const err = await rejectsWith(downloadAndCheck(signed('expired.tar.gz'), { expectedBytes: 10 }), BundleError);
    assert.equal(err.code, 'BundleUnavailable');
    assert.match(err.message, /HTTP 403 \(expired or revoked link\)/);
    assert.doesNotMatch(err.message, /SECRETSIG123/);
    const refused = await rejectsWith(
      downloadAndCheck('http://127.0.0.1:1/x.tar.gz?sig=SECRETSIG123', { expectedBytes: 10 }),
      BundleError,
    );
    assert.equal(refused.retryable, true);
    assert.doesNotMatch(refused.message, /SECRETSIG123/);
  });
});

describe('file sink', () => {
  test('writes the deployment document; version only when pinned', async () => {
    const file = path.join(dir, 'nested', 'deploy.json');
    const result = await applyToSink(bundleRequest({ sink: { type: 'file', path: file } }));
    assert.deepEqual(JSON.parse(await fsp.readFile(file, 'utf8')), {
      staticExport: { enabled: true, bundleUrl: signed('good.tar.gz') },
    });
    assert.deepEqual(result, {
      sink: 'file',
      appliedUrl: signed('good.tar.gz'),
      appliedExpiresAt: '2030-01-01T00:00:00.000Z',
    });
    await applyToSink(bundleRequest({ sink: { type: 'file', path: file }, version: 'v7' }));
    assert.equal(JSON.parse(await fsp.readFile(file, 'utf8')).staticExport.version, 'v7');
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
    const err = await rejectsWith(writeFileAtomic(file, 'NEW CONTENT\n', failingWrite), SinkError);
    assert.match(err.message, /ENOSPC/);
    const failingRename = {
      ...failingWrite,
      writeFile: (f: string, d: string) => fsp.writeFile(f, d),
      rename: () => Promise.reject(new Error('EXDEV')),
    };
    await rejectsWith(writeFileAtomic(file, 'NEW CONTENT\n', failingRename), SinkError);
    assert.equal(await fsp.readFile(file, 'utf8'), 'GOOD\n');
    assert.deepEqual(await fsp.readdir(path.dirname(file)), ['deploy.json']);
  });
});

describe('webhook sink', () => {
  test('POSTs the document as JSON', async () => {
    const url = `${fx.base}/hook?token=HOOKSECRET`;
    const result = await applyToSink(bundleRequest({ sink: { type: 'webhook', url }, version: 'v2' }));
    assert.equal(result.appliedUrl, signed('good.tar.gz'));
    assert.equal(fx.hits.length, 1);
    assert.equal(fx.hits[0]!.method, 'POST');
    assert.equal(fx.hits[0]!.contentType, 'application/json');
    assert.deepEqual(JSON.parse(fx.hits[0]!.body), {
      staticExport: { enabled: true, bundleUrl: signed('good.tar.gz'), version: 'v2' },
    });
  });

  test('non-2xx fails: 5xx retryable, 4xx not; messages carry no token or signature', async () => {
    const url = `${fx.base}/hook?token=HOOKSECRET`;
    fx.hookStatus = 503;
    const transient = await rejectsWith(applyToSink(bundleRequest({ sink: { type: 'webhook', url } })), SinkError);
    assert.equal(transient.retryable, true);
    assert.match(transient.message, /HTTP 503/);
    fx.hookStatus = 400;
    const refused = await rejectsWith(applyToSink(bundleRequest({ sink: { type: 'webhook', url } })), SinkError);
    assert.equal(refused.retryable, false);
    for (const message of [transient.message, refused.message]) assert.doesNotMatch(message, /HOOKSECRET|SECRETSIG123/);
  });
});

describe('command sink', () => {
  test('gets the values in its environment and the document on stdin, without the admin key', async () => {
    const out = path.join(dir, 'cmd');
    await fsp.mkdir(out, { recursive: true });
    const command = `cat > "${out}/stdin.json"; env | grep -E '^(STATIC_EXPORT_|DOCS_DOMAIN|ADMIN_API_KEY)' | sort > "${out}/env.txt"`;
    const result = await applyToSink(bundleRequest({ sink: { type: 'command', command }, version: 'v3' }), {
      env: { PATH: process.env.PATH, ADMIN_API_KEY: 'mint_do_not_pass' },
    });
    assert.equal(result.sink, 'command');
    assert.deepEqual(JSON.parse(await fsp.readFile(`${out}/stdin.json`, 'utf8')), {
      staticExport: { enabled: true, bundleUrl: signed('good.tar.gz'), version: 'v3' },
    });
    assert.deepEqual((await fsp.readFile(`${out}/env.txt`, 'utf8')).trim().split('\n'), [
      'DOCS_DOMAIN=docs.example.com',
      `STATIC_EXPORT_BUNDLE_URL=${signed('good.tar.gz')}`,
      'STATIC_EXPORT_EXPIRES_AT=2030-01-01T00:00:00.000Z',
      'STATIC_EXPORT_JOB_ID=job_1',
      'STATIC_EXPORT_VERSION=v3',
    ]);
  });

  test('a non-zero exit fails with the redacted stderr tail', async () => {
    const command = `echo "starting"; echo "Error: UPGRADE FAILED for $STATIC_EXPORT_BUNDLE_URL with Bearer abc.def mint_leaked_key" >&2; exit 3`;
    const err = await rejectsWith(applyToSink(bundleRequest({ sink: { type: 'command', command } })), SinkError);
    assert.match(err.message, /exited with code 3/);
    assert.match(err.message, /UPGRADE FAILED/);
    assert.match(err.message, /\/bundle\/good\.tar\.gz/);
    assert.doesNotMatch(err.message, /SECRETSIG123|abc\.def|mint_leaked_key/);
  });

  test('a command that ignores its stdin still succeeds', async () => {
    // It exits before reading the document: the write to its closed stdin must not fail the apply.
    const ran = path.join(dir, 'ignored-stdin-ran');
    const result = await applyToSink(
      bundleRequest({ sink: { type: 'command', command: `echo ran > ${ran}; exec 0<&-; true` } }),
    );
    assert.equal(result.sink, 'command');
    assert.equal((await fsp.readFile(ran, 'utf8')).trim(), 'ran');
  });
});

describe('mirror sink', () => {
  test('retention keeps the newest applies even when an older archive carries a later mtime', async () => {
    const mirrorDir = path.join(dir, 'mirror-clock');
    const sink = { type: 'mirror' as const, dir: mirrorDir, urlPrefix: 'https://mirror.internal/docs/' };
    await applyToSink(bundleRequest({ sink, jobId: 'job_1' }));
    // An mtime ahead of the kernel's clock (a reuse stamped from Date.now(), or a clock step back).
    const ahead = new Date(Date.now() + 60_000);
    await fsp.utimes(path.join(mirrorDir, mirrorFileName('docs.example.com', 'job_1')), ahead, ahead);
    // Several in a row: each stamp must read back strictly newer than the last (a Date-set mtime can
    // read back a fraction of a microsecond below what was set).
    const later = ['job_2', 'job_3', 'job_4', 'job_5', 'job_6', 'job_7', 'job_8'];
    for (const jobId of later) await applyToSink(bundleRequest({ sink, jobId }));
    const archives = (await fsp.readdir(mirrorDir)).filter((n) => n.endsWith('.tar.gz')).sort();
    assert.deepEqual(
      archives,
      later.slice(-3).map((j) => mirrorFileName('docs.example.com', j)),
    );
  });

  test('copies a checksummed archive, serves a stable URL, keeps the last 3 and skips re-downloads', async () => {
    const mirrorDir = path.join(dir, 'mirror');
    const sink = { type: 'mirror' as const, dir: mirrorDir, urlPrefix: 'https://mirror.internal/docs/' };
    const first = await applyToSink(bundleRequest({ sink, jobId: 'job_1' }));
    const name1 = mirrorFileName('docs.example.com', 'job_1');
    assert.deepEqual(first, {
      sink: 'mirror',
      appliedUrl: `https://mirror.internal/docs/${name1}`,
      appliedExpiresAt: null,
      sha256: SHA,
    });
    assert.deepEqual(await fsp.readFile(path.join(mirrorDir, name1)), ARCHIVE);
    assert.equal(await fsp.readFile(path.join(mirrorDir, `${name1}.sha256`), 'utf8'), `${SHA}  ${name1}\n`);
    assert.deepEqual(JSON.parse(await fsp.readFile(path.join(mirrorDir, MIRROR_DOCUMENT), 'utf8')), {
      staticExport: { enabled: true, bundleUrl: first.appliedUrl },
    });
    assert.equal(fx.bundleHits(), 1);

    // A refresh of the same job: the intact copy is reused, nothing is downloaded.
    const again = await applyToSink(bundleRequest({ sink, jobId: 'job_1' }));
    assert.equal(again.appliedUrl, first.appliedUrl);
    assert.equal(fx.bundleHits(), 1);

    for (const jobId of ['job_2', 'job_3', 'job_4']) await applyToSink(bundleRequest({ sink, jobId, version: 'v9' }));
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
    const sink = { type: 'mirror' as const, dir: mirrorDir, urlPrefix: 'https://mirror.internal/docs' };
    const good = await applyToSink(bundleRequest({ sink, jobId: 'job_ok' }));
    const before = await fsp.readFile(path.join(mirrorDir, MIRROR_DOCUMENT), 'utf8');
    await rejectsWith(
      applyToSink(
        bundleRequest({
          sink,
          jobId: 'job_bad',
          bundleUrl: signed('truncated.tar.gz'),
          sizeBytes: ARCHIVE.length - 20,
        }),
      ),
      BundleError,
    );
    await rejectsWith(
      applyToSink(bundleRequest({ sink, jobId: 'job_bad', sizeBytes: ARCHIVE.length + 5 })),
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

test('sinkProblems', () => {
  assert.deepEqual(sinkProblems({ type: 'file', path: '/etc/docs.json' }), []);
  assert.deepEqual(sinkProblems({ type: 'mirror', dir: '/srv/m', urlPrefix: 'http://m.internal/x', keep: 5 }), []);
  assert.match(sinkProblems({ type: 'webhook', url: 'https://user:pw@hook.example.com' })[0]!, /without credentials/);
  assert.equal(sinkProblems({ type: 'mirror', dir: '', urlPrefix: 'ftp://x', keep: 0 }).length, 3);
  assert.match(sinkProblems({ type: 'ftp' })[0]!, /one of file, webhook, command, mirror/);
  assert.match(sinkProblems(null)[0]!, /object/);
});
