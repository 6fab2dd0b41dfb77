// Bundle verification: a full streamed download of the presigned link, checking the HTTP status, the
// gzip magic bytes, the byte count against the Bundle's sizeBytes and the gzip stream's own integrity
// (CRC and length trailer), with a sha256 of what was read. Nothing is kept in memory. Used by the
// verifyBundle activity and by the mirror sink (which also writes the bytes to a file).
//
// A link is only data: the hosts and addresses it is fetched from, and what of an error answer is kept,
// are docs/contract.md, "Bundle downloads" (the address check: sink-guards.ts, in the connection's DNS lookup).
import { createHash } from 'node:crypto';
import { createReadStream, type WriteStream } from 'node:fs';
import { Transform, Writable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { type Agent, type Dispatcher, request } from 'undici';
import { ERROR_BODY_BYTES, readCapped } from '../api/capped-body';
import { redact } from '../api/credentials';
import { type HostRule, bundleLinkProblem, privateBundleHosts } from '../policies/bundle-hosts';
import type { ActivityFailureType } from '../shared/failures';
import { addressRefusal, guardedAgent } from './sink-guards';

/** Error codes of bundle problems; they become ApplicationFailure types in src/activities/export.ts. */
export type BundleErrorCode = (typeof ActivityFailureType)['bundleInvalid' | 'bundleUnavailable' | 'bundleRefused'];

/**
 * BundleInvalid: the link answered but the content is wrong (size, not gzip, corrupt): fetching the
 * same link again will not help. BundleUnavailable: the link could not be read (network, 5xx, expired
 * or revoked link): worth retrying, or generating a fresh link. BundleRefused: the link's host, or the
 * address it resolves to, is not one the worker may fetch from: nothing was sent.
 */
export class BundleError extends Error {
  override readonly name = 'BundleError';
  constructor(
    readonly code: BundleErrorCode,
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface BundleCheck {
  bytes: number;
  sha256: string;
}

export interface DownloadOptions {
  /** The Bundle's sizeBytes; the download must be exactly this long. */
  expectedBytes: number;
  /** Where links may be fetched from (bundleHostRules: the admin API's host, then BUNDLE_ALLOWED_HOSTS). */
  hosts: readonly HostRule[];
  signal?: AbortSignal;
  /** Called as bytes arrive (the activity heartbeats with it). */
  onProgress?: (bytes: number) => void;
  /** Also write the raw bytes here (the mirror's temporary file). */
  writeTo?: WriteStream;
  headersTimeoutMs?: number;
  /** Longest silence between body chunks. */
  bodyTimeoutMs?: number;
}

/** A URL safe to print: scheme, host and path; no query (a presigned link's signature), no credentials. */
export function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return '(unparseable URL)';
  }
}

/** Redacts keys and bearer tokens, and any of `urls` (signed links) down to their describeUrl form. */
export function redactText(text: string, urls: readonly string[] = []): string {
  let out = text;
  for (const url of urls) if (url) out = out.split(url).join(describeUrl(url));
  // Any other query-string signature that slipped through (X-Amz-Signature=..., sig=..., token=...).
  out = out.replace(/([?&](?:[\w-]*signature|sig|token|key|credential)[\w-]*=)[^&\s"']+/gi, '$1[redacted]');
  return redact(out);
}

const GZIP_MAGIC = [0x1f, 0x8b];

/** Pass-through that counts, hashes, checks the gzip magic and refuses more than `limit` bytes. */
class Inspector extends Transform {
  bytes = 0;
  readonly #hash = createHash('sha256');
  readonly #head: number[] = [];
  constructor(
    readonly limit: number,
    readonly onProgress?: (bytes: number) => void,
  ) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    for (let i = 0; i < chunk.length && this.#head.length < 2; i++) {
      this.#head.push(chunk[i]!);
      if (this.#head[this.#head.length - 1] !== GZIP_MAGIC[this.#head.length - 1]) {
        callback(new BundleError('BundleInvalid', 'bundle is not a gzip archive (wrong magic bytes)', false));
        return;
      }
    }
    this.bytes += chunk.length;
    if (this.bytes > this.limit) {
      callback(
        new BundleError(
          'BundleInvalid',
          `bundle is larger than its sizeBytes (${this.limit}): read ${this.bytes} bytes so far`,
          false,
        ),
      );
      return;
    }
    this.#hash.update(chunk);
    this.onProgress?.(this.bytes);
    callback(null, chunk);
  }
  digest(): string {
    return this.#hash.digest('hex');
  }
}

/** Discards what it is given (the end of a pipeline that only checks). */
function devNull(): Writable {
  return new Writable({ write: (_chunk, _encoding, callback) => callback() });
}

/** The hint of an address refusal: how the owner allows a private host for downloads. */
const PRIVATE_HINT = 'list the host exactly in BUNDLE_ALLOWED_HOSTS to allow it';

/** A dispatcher that reaches only what `hosts` allow, or BundleRefused naming the link's host (never its query). */
function downloadAgent(url: string, hosts: readonly HostRule[]): Agent {
  const problem = bundleLinkProblem(url, hosts);
  if (problem) throw new BundleError('BundleRefused', `bundle link refused: ${problem}`, false);
  try {
    return guardedAgent(url, privateBundleHosts(hosts), { hint: PRIVATE_HINT });
  } catch (err) {
    throw refusedOr(err) ?? err;
  }
}

/** BundleRefused for a connection the address check stopped, else undefined. */
function refusedOr(err: unknown): BundleError | undefined {
  const refused = addressRefusal(err);
  return refused && new BundleError('BundleRefused', `bundle link refused: ${refused.message}`, false);
}

/**
 * Downloads `url` in full and checks it: HTTP 200, gzip magic, exactly `expectedBytes` bytes, a gzip
 * stream that decompresses to its end without error. Returns the byte count and sha256. Throws
 * BundleError (never with the link's signature in the message); an abort by `signal` rethrows the
 * signal's reason. Nothing is sent to a host or address `options.hosts` does not allow.
 */
export async function downloadAndCheck(url: string, options: DownloadOptions): Promise<BundleCheck> {
  if (!Number.isInteger(options.expectedBytes) || options.expectedBytes <= 0) {
    throw new BundleError(
      'BundleInvalid',
      `bundle sizeBytes must be a positive integer (got ${options.expectedBytes})`,
      false,
    );
  }
  const dispatcher = downloadAgent(url, options.hosts);
  try {
    return await fetchAndCheck(url, options, dispatcher);
  } finally {
    await dispatcher.destroy().catch(() => undefined);
  }
}

async function fetchAndCheck(url: string, options: DownloadOptions, dispatcher: Agent): Promise<BundleCheck> {
  const where = describeUrl(url);
  let response: Dispatcher.ResponseData;
  try {
    // undici's request follows no redirect: a 3xx is refused below like any other answer but 200.
    response = await request(url, {
      method: 'GET',
      dispatcher,
      signal: options.signal,
      headersTimeout: options.headersTimeoutMs ?? 30_000,
      bodyTimeout: options.bodyTimeoutMs ?? 60_000,
    });
  } catch (err) {
    if (options.signal?.aborted) throw options.signal.reason;
    throw refusedOr(err) ?? unavailable(`could not download the bundle from ${where}`, err, url);
  }
  if (response.statusCode !== 200) throw await answerError(response, where);
  const inspector = new Inspector(options.expectedBytes, options.onProgress);
  try {
    if (options.writeTo) {
      await pipeline(response.body, inspector, options.writeTo, { signal: options.signal });
    } else {
      await pipeline(response.body, inspector, createGunzip(), devNull(), { signal: options.signal });
    }
  } catch (err) {
    if (options.signal?.aborted) throw options.signal.reason;
    if (err instanceof BundleError) throw err;
    if (isZlibError(err))
      throw new BundleError(
        'BundleInvalid',
        `bundle from ${where} is a corrupt gzip stream: ${(err as Error).message}`,
        false,
      );
    throw unavailable(`download of the bundle from ${where} broke off after ${inspector.bytes} bytes`, err, url);
  }
  if (inspector.bytes === 0) throw new BundleError('BundleInvalid', `bundle from ${where} is empty`, false);
  if (inspector.bytes !== options.expectedBytes) {
    throw new BundleError(
      'BundleInvalid',
      `bundle from ${where} is ${inspector.bytes} bytes, but sizeBytes says ${options.expectedBytes}`,
      false,
    );
  }
  if (options.writeTo) await checkGzipFile(options.writeTo.path.toString(), where);
  return { bytes: inspector.bytes, sha256: inspector.digest() };
}

/** A storage service's error code (S3, GCS, Azure: `<Code>AccessDenied</Code>`) when it is a plain word, else undefined. */
export function storageErrorCode(body: string): string | undefined {
  return /<Code>([A-Za-z]{1,64})<\/Code>/.exec(body)?.[1];
}

/**
 * BundleUnavailable for an answer other than 200: its status code, what that means for the link, and at
 * most a storage error code; the body is read to ERROR_BODY_BYTES and never quoted. 403/404/410 (an
 * expired or revoked link) and redirects (followed nowhere) will not change on retry.
 */
async function answerError(response: Dispatcher.ResponseData, where: string): Promise<BundleError> {
  const status = response.statusCode;
  const code = storageErrorCode(await readCapped(response.body, ERROR_BODY_BYTES).catch(() => ''));
  const gone = status === 403 || status === 404 || status === 410;
  const redirect = status >= 300 && status < 400;
  const meaning = gone ? 'expired or revoked link' : redirect ? 'a redirect: not followed' : undefined;
  const reason = [meaning, code].filter(Boolean).join(', ');
  return new BundleError(
    'BundleUnavailable',
    `bundle link ${where} answered HTTP ${status}${reason ? ` (${reason})` : ''}`,
    !gone && !redirect,
  );
}

/** Decompresses a local file to its end (CRC and length checked by zlib); throws BundleInvalid if corrupt. */
export async function checkGzipFile(file: string, label = file): Promise<void> {
  try {
    await pipeline(createReadStream(file), createGunzip(), devNull());
  } catch (err) {
    throw new BundleError(
      'BundleInvalid',
      `bundle from ${label} is a corrupt gzip stream: ${(err as Error).message}`,
      false,
    );
  }
}

/** sha256 (hex) of a local file, streamed. */
export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function isZlibError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('Z_');
}

function unavailable(message: string, err: unknown, url: string): BundleError {
  const code = (err as { code?: unknown } | null)?.code;
  const reason = err instanceof Error ? redactText(err.message, [url]) : 'unknown error';
  return new BundleError(
    'BundleUnavailable',
    `${message}: ${typeof code === 'string' ? `${code} ` : ''}${reason}`,
    true,
  );
}
