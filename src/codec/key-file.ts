// The payload key file (PAYLOAD_ENCRYPTION_KEYS_FILE): lines `<keyId> <base64 of 32 random bytes>`.
// The first line's key encrypts, every listed key decrypts. The file is read again whenever its
// mtime, size or inode changes (one stat per use: no watcher), so a key rotates by adding a line on
// top, and an old line is dropped once no open history holds payloads encrypted with it.
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';

export const KEY_BYTES = 32;
/** Key ids are written into every encrypted payload's metadata: short, printable, no spaces. */
const KEY_ID_FORM = /^[A-Za-z0-9._:-]{1,64}$/;
const BASE64_FORM = /^[A-Za-z0-9+/]+={0,2}$/;

export interface PayloadKey {
  id: string;
  key: Buffer;
}

export interface KeyRing {
  /** The first line's key: every new payload is encrypted with it. */
  current: PayloadKey;
  /** Every key of the file by id. */
  byId: ReadonlyMap<string, Buffer>;
}

/** A key file that cannot be used: names the file and the line, never a key's value. */
export class KeyFileError extends Error {
  override readonly name = 'KeyFileError';
}

/** Parses a key file's text (`file` only names it in errors). Blank lines and `#` comments are ignored. */
export function parseKeyFile(text: string, file: string): KeyRing {
  const keys: PayloadKey[] = [];
  const lines = text.split(/\r?\n/);
  for (const [index, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const where = `${file} line ${index + 1}`;
    const [id, encoded, ...rest] = line.split(/\s+/);
    if (!id || !encoded || rest.length > 0)
      throw new KeyFileError(`${where}: expected "<keyId> <base64 of ${KEY_BYTES} bytes>"`);
    if (!KEY_ID_FORM.test(id))
      throw new KeyFileError(`${where}: the key id must be 1-64 characters of A-Z a-z 0-9 . _ : -`);
    if (!BASE64_FORM.test(encoded) || encoded.length % 4 !== 0)
      throw new KeyFileError(`${where}: the key of "${id}" is not valid base64`);
    const key = Buffer.from(encoded, 'base64');
    if (key.length !== KEY_BYTES)
      throw new KeyFileError(`${where}: the key of "${id}" is ${key.length} bytes, expected ${KEY_BYTES}`);
    if (keys.some((k) => k.id === id)) throw new KeyFileError(`${where}: key id "${id}" is listed twice`);
    keys.push({ id, key });
  }
  const [current] = keys;
  if (!current) throw new KeyFileError(`${file}: no key in the file (expected lines "<keyId> <base64>")`);
  return { current, byId: new Map(keys.map((k) => [k.id, k.key])) };
}

/** A new key file line: a key id from the date and 4 random bytes, and 32 random bytes in base64. */
export function generateKeyLine(now = new Date()): string {
  const day = now.toISOString().slice(0, 10).replace(/-/g, '');
  return `k${day}-${randomBytes(4).toString('hex')} ${randomBytes(KEY_BYTES).toString('base64')}`;
}

/**
 * The key file, read at construction (a bad file throws KeyFileError) and again when it changed. A
 * change that leaves the file unusable (half written, a typo) keeps the keys read last and is
 * reported once through onProblem (default: a process warning on stderr); the next good version is
 * picked up.
 */
export class KeyFile {
  private ring: KeyRing;
  private stamp: string;
  private lastProblem: string | undefined;

  constructor(
    readonly path: string,
    private readonly onProblem: (message: string) => void = (message) =>
      process.emitWarning(message, 'PayloadKeyFileWarning'),
  ) {
    this.stamp = this.statStamp();
    this.ring = this.read();
  }

  /** The keys as the file has them now (one stat; a read only when it changed). */
  keys(): KeyRing {
    try {
      const stamp = this.statStamp();
      if (stamp !== this.stamp) {
        this.ring = this.read();
        this.stamp = stamp;
        this.lastProblem = undefined;
      }
    } catch (err) {
      const message = `${(err as Error).message}; still using the keys read before`;
      if (message !== this.lastProblem) this.onProblem(message);
      this.lastProblem = message;
    }
    return this.ring;
  }

  private statStamp(): string {
    const s = this.io(() => statSync(this.path));
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  }

  private read(): KeyRing {
    return parseKeyFile(
      this.io(() => readFileSync(this.path, 'utf8')),
      this.path,
    );
  }

  private io<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? String(err);
      throw new KeyFileError(`${this.path}: cannot read the payload key file (${code})`, { cause: err });
    }
  }
}
