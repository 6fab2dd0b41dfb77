// Bundle verification: a full streamed download of the presigned link, checking the HTTP status, the
// gzip magic bytes, the byte count against the Bundle's sizeBytes and the gzip stream's own integrity
// (CRC and length trailer), with a sha256 of what was read. Nothing is kept in memory. Used by the
// verifyBundle activity and by the mirror sink (which also writes the bytes to a file).
import { createHash } from 'node:crypto';
import { createReadStream, type WriteStream } from 'node:fs';
import { Transform, Writable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { request } from 'undici';
import { redact } from '../api/redact';
import type { ActivityFailureType } from '../shared/failures';

/** Error codes of bundle problems; they become ApplicationFailure types in src/activities/export.ts. */
export type BundleErrorCode = (typeof ActivityFailureType)['bundleInvalid' | 'bundleUnavailable'];

/**
 * BundleInvalid: the link answered but the content is wrong (size, not gzip, corrupt): fetching the
 * same link again will not help. BundleUnavailable: the link could not be read (network, 5xx, expired
 * or revoked link): worth retrying, or generating a fresh link.
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

/**
 * Downloads `url` in full and checks it: HTTP 200, gzip magic, exactly `expectedBytes` bytes, a gzip
 * stream that decompresses to its end without error. Returns the byte count and sha256. Throws
 * BundleError (never with the link's signature in the message); an abort by `signal` rethrows the
 * signal's reason.
 */
export async function downloadAndCheck(url: string, options: DownloadOptions): Promise<BundleCheck> {
  const where = describeUrl(url);
  if (!Number.isInteger(options.expectedBytes) || options.expectedBytes <= 0) {
    throw new BundleError(
      'BundleInvalid',
      `bundle sizeBytes must be a positive integer (got ${options.expectedBytes})`,
      false,
    );
  }
  let response: Awaited<ReturnType<typeof request>>;
  try {
    response = await request(url, {
      method: 'GET',
      signal: options.signal,
      headersTimeout: options.headersTimeoutMs ?? 30_000,
      bodyTimeout: options.bodyTimeoutMs ?? 60_000,
    });
  } catch (err) {
    if (options.signal?.aborted) throw options.signal.reason;
    throw unavailable(`could not download the bundle from ${where}`, err, url);
  }
  if (response.statusCode !== 200) {
    const body = await response.body.text().catch(() => '');
    const gone = response.statusCode === 403 || response.statusCode === 404 || response.statusCode === 410;
    throw new BundleError(
      'BundleUnavailable',
      `bundle link ${where} answered HTTP ${response.statusCode}${gone ? ' (expired or revoked link)' : ''}: ${redactText(body.slice(0, 200), [url])}`,
      !gone,
    );
  }
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
