// Sinks: the ways a verified bundle link reaches a self-hosted deployment's configuration
// (`staticExport.enabled`, `staticExport.bundleUrl`, `staticExport.version`): file, webhook, command and
// mirror, each a sink of the worker's sinks file (sinks-file.ts); what each does and refuses is the
// contract's (docs/contract.md, "Sinks file"); the checks on paths and addresses are in sink-guards.ts.
//
// Failures are SinkError (retryable or not); the activity layer turns them into ApplicationFailures.
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { type WriteStream, constants, createWriteStream } from 'node:fs';
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { type Agent, request } from 'undici';
import { parse } from 'yaml';
import type { HostRule } from '../policies/bundle-hosts';
import type { SinkType } from '../shared/bundle-keeper';
import { addressRefusal, guardedAgent, pathProblem } from './sink-guards';
import type { SinkDefinition } from './sinks-file';
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
  /** The keeper's sink: a name of the worker's sinks file (or an inline sink of an earlier release). */
  sink: unknown;
  /** The type the keeper resolved the name to: a name whose type changed since is refused (checked again). */
  sinkType?: SinkType;
  jobId: string;
  bundleUrl: string;
  expiresAt: string;
  sizeBytes: number;
  /** Pinned version, or null for the latest published. */
  version: string | null;
}

export interface ApplyBundleResult {
  sink: SinkType;
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
  /** Environment the command sink picks PATH, HOME and its listed names from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Where the mirror may download the bundle from (verify.ts); none given: every link is refused. */
  bundleHosts?: readonly HostRule[];
}

/** Applies a (verified) bundle through a sink of the worker's file. */
export async function applyToSink(
  sink: SinkDefinition,
  req: ApplyBundleRequest,
  ctx: SinkContext = {},
): Promise<ApplyBundleResult> {
  const applied = { appliedUrl: req.bundleUrl, appliedExpiresAt: req.expiresAt };
  switch (sink.type) {
    case 'file': {
      const document = `${JSON.stringify(deploymentDocument(req.bundleUrl, req.version), null, 2)}\n`;
      await writeSinkFile(sink.root, sink.path, document, sink.mode);
      return { sink: 'file', ...applied };
    }
    case 'webhook': {
      await postWebhook(sink, deploymentDocument(req.bundleUrl, req.version), ctx.signal);
      return { sink: 'webhook', ...applied };
    }
    case 'command': {
      const env = commandEnv(req, sink.env, ctx.env ?? process.env);
      await runCommand(sink.argv, env, `${JSON.stringify(deploymentDocument(req.bundleUrl, req.version))}\n`, {
        signal: ctx.signal,
        secrets: [req.bundleUrl, ...sink.env.map((name) => env[name] ?? '')],
        onProgress: ctx.onProgress,
      });
      return { sink: 'command', ...applied };
    }
    case 'mirror':
      return mirrorBundle(req, sink, ctx);
  }
}

// ---- file ---------------------------------------------------------------------------------------------

/** The file-system calls writeFileAtomic makes (injectable so a test can make one of them fail). */
export interface AtomicWriteIo {
  writeFile(file: string, data: string, mode: number): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  rm(file: string): Promise<void>;
}

/** Create only, never through a symbolic link: a link planted at the temporary name fails the open. */
const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

const realIo: AtomicWriteIo = {
  async writeFile(file, data, mode) {
    const handle = await fsp.open(file, CREATE_NEW, mode);
    try {
      await handle.chmod(mode); // the umask may have narrowed the mode asked for at creation
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
  rename: (from, to) => fsp.rename(from, to),
  rm: (file) => fsp.rm(file, { force: true }),
};

/** A write stream on a file created here with CREATE_NEW (a stream's own flags are strings: no O_NOFOLLOW). */
async function newFileStream(file: string, mode: number): Promise<WriteStream> {
  const stream = createWriteStream(file, { fd: await fsp.open(file, CREATE_NEW, mode) });
  stream.path = file; // what the download's gzip check reads back
  return stream;
}

/**
 * Replaces `file` with `contents` atomically: a temporary file in the same directory (so rename does
 * not cross file systems), fsynced, renamed over the target. On any failure the temporary file is
 * removed and the previous file is untouched.
 */
export async function writeFileAtomic(
  file: string,
  contents: string,
  mode = 0o600,
  io: AtomicWriteIo = realIo,
): Promise<void> {
  const dir = path.dirname(file);
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await fsp.mkdir(dir, { recursive: true });
    await io.writeFile(tmp, contents, mode);
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

/** writeFileAtomic below an allowed directory, refused (non-retryable) where a symbolic link is in the way. */
export async function writeSinkFile(root: string, file: string, contents: string, mode: number): Promise<void> {
  const problem = await pathProblem(root, file, false);
  if (problem) throw new SinkError(problem, false);
  await writeFileAtomic(file, contents, mode);
}

// ---- webhook ------------------------------------------------------------------------------------------

type WebhookSink = Extract<SinkDefinition, { type: 'webhook' }>;

/** Extra request headers from the sink's secret file (a YAML/JSON map); never echoed. */
async function webhookHeaders(sink: WebhookSink): Promise<Record<string, string>> {
  if (!sink.headersFile) return {};
  let map: unknown;
  try {
    map = parse(await fsp.readFile(sink.headersFile, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'not YAML';
    throw new SinkError(`webhook headersFile ${sink.headersFile} cannot be read (${code})`, true);
  }
  if (typeof map !== 'object' || map === null || !Object.values(map).every((v) => typeof v === 'string'))
    throw new SinkError(`webhook headersFile ${sink.headersFile} must be a map of header name to string`, false);
  return map as Record<string, string>;
}

export async function postWebhook(
  sink: WebhookSink,
  document: DeploymentDocument,
  signal?: AbortSignal,
): Promise<void> {
  const where = describeUrl(sink.url);
  const headers = await webhookHeaders(sink);
  let dispatcher: Agent;
  try {
    dispatcher = guardedAgent(sink.url, sink.allowPrivateHosts);
  } catch (err) {
    throw new SinkError(`webhook refused: ${(err as Error).message}`, false);
  }
  let status: number;
  try {
    // undici's request follows no redirect: a 3xx is an answer like any other non-2xx.
    const response = await request(sink.url, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(document),
      signal,
      dispatcher,
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
    status = response.statusCode;
    await response.body.dump().catch(() => undefined); // the answer's body is never kept
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    const refused = addressRefusal(err);
    if (refused) throw new SinkError(`webhook refused: ${refused.message}`, false);
    const code = (err as { code?: unknown }).code;
    throw new SinkError(`webhook ${where} could not be reached${typeof code === 'string' ? `: ${code}` : ''}`, true, {
      cause: err,
    });
  } finally {
    await dispatcher.close().catch(() => undefined);
  }
  if (status < 200 || status > 299) {
    // 408, 429 and 5xx may pass on retry; any other answer is the receiver refusing the document.
    const retryable = status === 408 || status === 429 || status >= 500;
    throw new SinkError(`webhook ${where} answered HTTP ${status}`, retryable);
  }
}

// ---- command ------------------------------------------------------------------------------------------

/** The command's whole environment: PATH, HOME, the names the sink lists (from `base`), the bundle's values. */
export function commandEnv(
  req: ApplyBundleRequest,
  listed: readonly string[],
  base: NodeJS.ProcessEnv,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of ['PATH', 'HOME', ...listed]) if (base[name] !== undefined) env[name] = base[name];
  return {
    ...env,
    STATIC_EXPORT_BUNDLE_URL: req.bundleUrl,
    STATIC_EXPORT_VERSION: req.version ?? '',
    STATIC_EXPORT_JOB_ID: req.jobId,
    STATIC_EXPORT_EXPIRES_AT: req.expiresAt,
    STATIC_EXPORT_DOMAIN: req.domain,
  };
}

/** The stderr kept: enough for a reason, short enough for a status line. */
const STDERR_TAIL = 300;

export interface RunCommandOptions {
  signal?: AbortSignal;
  /** Strings to redact from the stderr tail (the signed link, the listed variables' values). */
  secrets?: readonly string[];
  onProgress?: (details: unknown) => void;
}

/**
 * Runs argv[0] with argv's other items as its arguments (shell: false: what execFile does, streaming
 * stderr instead of buffering it) and `stdin` on its standard input; rejects on a non-zero exit.
 */
export function runCommand(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  stdin: string,
  options: RunCommandOptions = {},
): Promise<void> {
  const [file, ...args] = argv;
  return new Promise((resolve, reject) => {
    const child = spawn(file!, args, {
      shell: false,
      env,
      stdio: ['pipe', 'ignore', 'pipe'],
      signal: options.signal,
      killSignal: 'SIGTERM',
    });
    let tail = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      tail = (tail + chunk).slice(-4 * STDERR_TAIL);
      options.onProgress?.({ stderrBytes: tail.length });
    });
    // The command may exit without reading its stdin: that is its business, not a failure.
    child.stdin.on('error', () => undefined);
    child.stdin.end(stdin);
    child.on('error', (err) => {
      if (options.signal?.aborted) reject(options.signal.reason);
      else {
        const code = (err as NodeJS.ErrnoException).code ?? 'error';
        reject(new SinkError(`command ${path.basename(file!)} could not be started (${code})`, true, { cause: err }));
      }
    });
    child.on('close', (code, signal) => {
      if (options.signal?.aborted) return reject(options.signal.reason);
      if (code === 0) return resolve();
      const how = code === null ? `was killed by ${signal}` : `exited with code ${code}`;
      const secrets = (options.secrets ?? []).filter((s) => s.length >= 4);
      let stderr = redactText(tail.trim(), options.secrets ?? []);
      for (const secret of secrets) stderr = stderr.split(secret).join('[redacted]');
      stderr = stderr.slice(-STDERR_TAIL).replace(/\s+/g, ' ');
      reject(new SinkError(`command ${how}${stderr ? `; stderr: ${stderr}` : ' (no stderr)'}`, true));
    });
  });
}

// ---- mirror -------------------------------------------------------------------------------------------

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
  sink: Extract<SinkDefinition, { type: 'mirror' }>,
  ctx: SinkContext = {},
): Promise<ApplyBundleResult> {
  const { keep, mode } = sink;
  const problem = await pathProblem(sink.root, sink.dir, true);
  if (problem) throw new SinkError(problem, false);
  await fsp.mkdir(sink.dir, { recursive: true });
  const name = mirrorFileName(req.domain, req.jobId);
  const file = path.join(sink.dir, name);
  const sumFile = `${file}.sha256`;

  let sha256 = await existingCopy(file, sumFile, req.sizeBytes);
  if (sha256 === null) {
    const tmp = path.join(sink.dir, `.${name}.${process.pid}.${randomBytes(6).toString('hex')}.partial`);
    let writeTo: WriteStream | undefined;
    try {
      writeTo = await newFileStream(tmp, mode);
      const check = await downloadAndCheck(req.bundleUrl, {
        expectedBytes: req.sizeBytes,
        hosts: ctx.bundleHosts ?? [],
        signal: ctx.signal,
        writeTo,
        onProgress: (bytes) => ctx.onProgress?.({ bytes }),
      });
      sha256 = check.sha256;
      await writeFileAtomic(sumFile, `${sha256}  ${name}\n`, mode);
      await fsp.rename(tmp, file);
    } catch (err) {
      writeTo?.destroy(); // a link refused before the download leaves it open
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
    mode,
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
