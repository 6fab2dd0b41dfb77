// Sinks: the ways a verified bundle link reaches a self-hosted deployment's configuration
// (`staticExport.enabled`, `staticExport.bundleUrl`, `staticExport.version`, docs/contract.md).
//
//   file     atomically replaces a JSON config file (write to a temporary file, fsync, rename): a reader
//            sees the old document or the new one, never half of one; on failure the last good file stays.
//   webhook  POSTs the same document (undici); any non-2xx answer is a failure.
//   command  runs a shell command (typically `helm upgrade ... --set-string
//            staticExport.bundleUrl=$STATIC_EXPORT_BUNDLE_URL`) with the values in its environment and
//            the document on stdin; a non-zero exit is a failure carrying the (redacted) stderr tail.
//   mirror   copies the archive into a directory (sha256-checksummed, the last `keep` versions kept for
//            rollback) and writes the document with a stable URL under urlPrefix: for deployments that
//            cannot reach the presigned link (air-gapped). The mirrored URL does not expire.
//
// Failures are SinkError (retryable or not); the activity layer turns them into ApplicationFailures.
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { request } from 'undici';
import type { SinkConfig } from '../shared/bundle-keeper';
import { BundleError, describeUrl, downloadAndCheck, redactText, sha256File } from './verify';

/** The document every sink applies (the deployment's config, docs/contract.md). */
export interface DeploymentDocument {
  staticExport: { enabled: true; bundleUrl: string; version?: string };
}

export function deploymentDocument(bundleUrl: string, version: string | null): DeploymentDocument {
  return { staticExport: { enabled: true, bundleUrl, ...(version ? { version } : {}) } };
}

/** The bundle to apply: a verified presigned link and where it came from. */
export interface ApplyBundleRequest {
  domain: string;
  sink: SinkConfig;
  jobId: string;
  bundleUrl: string;
  expiresAt: string;
  sizeBytes: number;
  /** Pinned version, or null for the latest published. */
  version: string | null;
}

export interface ApplyBundleResult {
  sink: SinkConfig['type'];
  /** What the deployment is now configured with (the mirror's stable URL for the mirror sink). */
  appliedUrl: string;
  /** When appliedUrl stops working; null when it does not (mirror). */
  appliedExpiresAt: string | null;
  /** Mirror only: checksum of the copied archive. */
  sha256?: string;
}

export class SinkError extends Error {
  override readonly name = 'SinkError';
  constructor(
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface SinkContext {
  signal?: AbortSignal;
  /** Called during long operations (mirror download, command); the activity heartbeats with it. */
  onProgress?: (details: unknown) => void;
  /** Environment the command sink starts from (default process.env, minus ADMIN_API_KEY). */
  env?: NodeJS.ProcessEnv;
}

/** Applies a (verified) bundle through the configured sink. */
export async function applyToSink(req: ApplyBundleRequest, ctx: SinkContext = {}): Promise<ApplyBundleResult> {
  const { sink } = req;
  switch (sink.type) {
    case 'file': {
      await writeFileAtomic(sink.path, `${JSON.stringify(deploymentDocument(req.bundleUrl, req.version), null, 2)}\n`);
      return { sink: 'file', appliedUrl: req.bundleUrl, appliedExpiresAt: req.expiresAt };
    }
    case 'webhook': {
      await postWebhook(sink.url, deploymentDocument(req.bundleUrl, req.version), ctx.signal);
      return { sink: 'webhook', appliedUrl: req.bundleUrl, appliedExpiresAt: req.expiresAt };
    }
    case 'command': {
      await runCommand(
        sink.command,
        commandEnv(req, ctx.env ?? process.env),
        `${JSON.stringify(deploymentDocument(req.bundleUrl, req.version))}\n`,
        {
          signal: ctx.signal,
          secrets: [req.bundleUrl],
          onProgress: ctx.onProgress,
        },
      );
      return { sink: 'command', appliedUrl: req.bundleUrl, appliedExpiresAt: req.expiresAt };
    }
    case 'mirror':
      return mirrorBundle(req, sink, ctx);
  }
}

// ---- file ---------------------------------------------------------------------------------------------

/** The file-system calls writeFileAtomic makes (injectable so a test can make one of them fail). */
export interface AtomicWriteIo {
  writeFile(file: string, data: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  rm(file: string): Promise<void>;
}

const realIo: AtomicWriteIo = {
  async writeFile(file, data) {
    const handle = await fsp.open(file, 'wx', 0o644);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
  rename: (from, to) => fsp.rename(from, to),
  rm: (file) => fsp.rm(file, { force: true }),
};

/**
 * Replaces `file` with `contents` atomically: a temporary file in the same directory (so rename does
 * not cross file systems), fsynced, renamed over the target. On any failure the temporary file is
 * removed and the previous file is untouched.
 */
export async function writeFileAtomic(file: string, contents: string, io: AtomicWriteIo = realIo): Promise<void> {
  const dir = path.dirname(file);
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await fsp.mkdir(dir, { recursive: true });
    await io.writeFile(tmp, contents);
    await io.rename(tmp, file);
  } catch (err) {
    await io.rm(tmp).catch(() => undefined);
    throw new SinkError(`could not write ${file}: ${(err as Error).message}`, true, { cause: err });
  }
  // Make the rename itself durable (best effort: not every file system lets a directory be fsynced).
  const dirHandle = await fsp.open(dir, 'r').catch(() => undefined);
  await dirHandle?.sync().catch(() => undefined);
  await dirHandle?.close();
}

// ---- webhook ------------------------------------------------------------------------------------------

export async function postWebhook(url: string, document: DeploymentDocument, signal?: AbortSignal): Promise<void> {
  const where = describeUrl(url);
  let response: Awaited<ReturnType<typeof request>>;
  try {
    response = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(document),
      signal,
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    const code = (err as { code?: unknown }).code;
    throw new SinkError(
      `webhook ${where} could not be reached: ${typeof code === 'string' ? `${code} ` : ''}${redactText((err as Error).message, [url])}`,
      true,
      {
        cause: err,
      },
    );
  }
  const body = await response.body.text().catch(() => '');
  const status = response.statusCode;
  if (status < 200 || status > 299) {
    // 408, 429 and 5xx may pass on retry; any other answer is the receiver refusing the document.
    const retryable = status === 408 || status === 429 || status >= 500;
    throw new SinkError(
      `webhook ${where} answered HTTP ${status}: ${redactText(body.slice(0, 300), [url, document.staticExport.bundleUrl])}`,
      retryable,
    );
  }
}

// ---- command ------------------------------------------------------------------------------------------

/** The command's environment: the worker's, without the admin key, plus the bundle's values. */
export function commandEnv(req: ApplyBundleRequest, base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  delete env.ADMIN_API_KEY;
  return {
    ...env,
    STATIC_EXPORT_BUNDLE_URL: req.bundleUrl,
    STATIC_EXPORT_VERSION: req.version ?? '',
    STATIC_EXPORT_JOB_ID: req.jobId,
    STATIC_EXPORT_EXPIRES_AT: req.expiresAt,
    DOCS_DOMAIN: req.domain,
  };
}

const STDERR_TAIL = 2_000;

export interface RunCommandOptions {
  signal?: AbortSignal;
  /** Strings to redact from the stderr tail (the signed link). */
  secrets?: readonly string[];
  onProgress?: (details: unknown) => void;
}

/** Runs `command` through /bin/sh with `stdin` on its standard input; rejects on a non-zero exit. */
export function runCommand(
  command: string,
  env: NodeJS.ProcessEnv,
  stdin: string,
  options: RunCommandOptions = {},
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, {
      shell: true,
      env,
      stdio: ['pipe', 'ignore', 'pipe'],
      signal: options.signal,
      killSignal: 'SIGTERM',
    });
    let tail = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      tail = (tail + chunk).slice(-STDERR_TAIL);
      options.onProgress?.({ stderrBytes: tail.length });
    });
    // The command may exit without reading its stdin: that is its business, not a failure.
    child.stdin.on('error', () => undefined);
    child.stdin.end(stdin);
    child.on('error', (err) => {
      if (options.signal?.aborted) reject(options.signal.reason);
      else reject(new SinkError(`command could not be started: ${err.message}`, true, { cause: err }));
    });
    child.on('close', (code, signal) => {
      if (options.signal?.aborted) return reject(options.signal.reason);
      if (code === 0) return resolve();
      const how = code === null ? `was killed by ${signal}` : `exited with code ${code}`;
      const stderr = redactText(tail.trim(), options.secrets ?? []);
      reject(new SinkError(`command ${how}${stderr ? `; stderr: ${stderr}` : ' (no stderr)'}`, true));
    });
  });
}

// ---- mirror -------------------------------------------------------------------------------------------

export const DEFAULT_MIRROR_KEEP = 3;
/** Name of the deployment document the mirror sink writes next to the archives. */
export const MIRROR_DOCUMENT = 'staticExport.json';

const safeName = (text: string) => text.replace(/[^A-Za-z0-9._-]/g, '_');

/** Archive file name for a job: stable, so the mirrored URL of a job never changes. */
export function mirrorFileName(domain: string, jobId: string): string {
  return `${safeName(domain)}--${safeName(jobId)}.tar.gz`;
}

export function mirrorUrl(urlPrefix: string, fileName: string): string {
  return `${urlPrefix.replace(/\/+$/, '')}/${encodeURIComponent(fileName)}`;
}

/**
 * Copies the archive into sink.dir (unless a checksummed copy of the same job is already there),
 * writes `<file>.sha256` (sha256sum format), points staticExport.json at the stable URL and keeps the
 * newest `keep` archives of the domain. The copy is checked (size, gzip magic, gzip integrity) before
 * it replaces anything, so a bad bundle never reaches the mirror.
 */
export async function mirrorBundle(
  req: ApplyBundleRequest,
  sink: Extract<SinkConfig, { type: 'mirror' }>,
  ctx: SinkContext = {},
): Promise<ApplyBundleResult> {
  const keep = sink.keep ?? DEFAULT_MIRROR_KEEP;
  await fsp.mkdir(sink.dir, { recursive: true });
  const name = mirrorFileName(req.domain, req.jobId);
  const file = path.join(sink.dir, name);
  const sumFile = `${file}.sha256`;

  let sha256 = await existingCopy(file, sumFile, req.sizeBytes);
  if (sha256 === null) {
    const tmp = path.join(sink.dir, `.${name}.${process.pid}.${randomBytes(6).toString('hex')}.partial`);
    try {
      const check = await downloadAndCheck(req.bundleUrl, {
        expectedBytes: req.sizeBytes,
        signal: ctx.signal,
        writeTo: createWriteStream(tmp, { flags: 'wx' }),
        onProgress: (bytes) => ctx.onProgress?.({ bytes }),
      });
      sha256 = check.sha256;
      await writeFileAtomic(sumFile, `${sha256}  ${name}\n`);
      await fsp.rename(tmp, file);
    } catch (err) {
      await fsp.rm(tmp, { force: true });
      if (err instanceof BundleError || err instanceof SinkError) throw err;
      if (ctx.signal?.aborted) throw err;
      throw new SinkError(`could not mirror the bundle into ${sink.dir}: ${(err as Error).message}`, true, {
        cause: err,
      });
    }
  }
  const appliedUrl = mirrorUrl(sink.urlPrefix, name);
  await writeFileAtomic(
    path.join(sink.dir, MIRROR_DOCUMENT),
    `${JSON.stringify(deploymentDocument(appliedUrl, req.version), null, 2)}\n`,
  );
  // New or mirrored before: either way it is now the domain's newest archive.
  await retainNewest(sink.dir, req.domain, name, keep);
  return { sink: 'mirror', appliedUrl, appliedExpiresAt: null, sha256 };
}

/** The checksum of an existing, intact copy of the archive (size and sha256 match), or null. */
async function existingCopy(file: string, sumFile: string, sizeBytes: number): Promise<string | null> {
  try {
    const [stat, sum] = await Promise.all([fsp.stat(file), fsp.readFile(sumFile, 'utf8')]);
    const recorded = sum.trim().split(/\s+/)[0];
    if (stat.size !== sizeBytes || !recorded) return null;
    return (await sha256File(file)) === recorded ? recorded : null;
  } catch {
    return null;
  }
}

/**
 * Retention by mtime: stamps `current` strictly after every other archive of the domain, then deletes
 * the oldest beyond `keep` (never `current`). The explicit stamp matters: a file the kernel just wrote
 * carries an mtime from its coarse clock, which can be older than one set a moment before from
 * Date.now(), so two applies in quick succession could otherwise prune the newer one.
 */
async function retainNewest(dir: string, domain: string, current: string, keep: number): Promise<void> {
  const prefix = `${safeName(domain)}--`;
  const names = (await fsp.readdir(dir)).filter((n) => n.startsWith(prefix) && n.endsWith('.tar.gz') && n !== current);
  const others = await Promise.all(names.map(async (n) => ({ n, mtime: (await fsp.stat(path.join(dir, n))).mtimeMs })));
  // Whole milliseconds, rounded up: a Date-set mtime reads back a fraction of a microsecond off.
  const at = new Date(Math.max(Date.now(), ...others.map((a) => Math.ceil(a.mtime) + 1)));
  await fsp.utimes(path.join(dir, current), at, at);
  others.sort((a, b) => b.mtime - a.mtime);
  for (const { n } of others.slice(Math.max(0, keep - 1))) {
    await fsp.rm(path.join(dir, n), { force: true });
    await fsp.rm(path.join(dir, `${n}.sha256`), { force: true });
  }
}
