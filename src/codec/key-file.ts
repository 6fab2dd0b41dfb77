// The payload key file (PAYLOAD_ENCRYPTION_KEYS_FILE): its lines (the first without `decrypt-only`
// encrypts, every listed key decrypts) and its staged rotation: docs/security.md, "Key file format and
// rotation". The file is read again whenever it changes.
import { randomBytes } from 'node:crypto';
import { WatchedFile } from '../config/watched-file';

export const KEY_BYTES = 32;
/** The marker (third field) of a key that decrypts but never encrypts. */
export const DECRYPT_ONLY = 'decrypt-only';
/** Key ids are written into every encrypted payload's metadata: short, printable, no spaces. */
const KEY_ID_FORM = /^[A-Za-z0-9._:-]{1,64}$/;
const BASE64_FORM = /^[A-Za-z0-9+/]+={0,2}$/;

export interface PayloadKey {
  id: string;
  key: Buffer;
}

export interface KeyRing {
  /** The first key without the decrypt-only marker: every new payload is encrypted with it. */
  current: PayloadKey;
  /** Every key of the file by id, in the file's order. */
  byId: ReadonlyMap<string, Buffer>;
  /** The ids marked decrypt-only. */
  decryptOnly: ReadonlySet<string>;
}

/** A key file that cannot be used: names the file and the line, never a key's value. */
export class KeyFileError extends Error {
  override readonly name = 'KeyFileError';
}

interface KeyLine extends PayloadKey {
  /** Index in the file's lines (0-based). */
  index: number;
  decryptOnly: boolean;
}

/** The key lines of a file's text; blank lines and `#` comments are skipped. Throws on a bad line. */
function keyLines(text: string, file: string): KeyLine[] {
  const keys: KeyLine[] = [];
  for (const [index, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const where = `${file} line ${index + 1}`;
    const [id, encoded, marker, ...rest] = line.split(/\s+/);
    if (!id || !encoded || rest.length > 0 || (marker !== undefined && marker !== DECRYPT_ONLY))
      throw new KeyFileError(`${where}: expected "<keyId> <base64 of ${KEY_BYTES} bytes> [${DECRYPT_ONLY}]"`);
    if (!KEY_ID_FORM.test(id))
      throw new KeyFileError(`${where}: the key id must be 1-64 characters of A-Z a-z 0-9 . _ : -`);
    if (!BASE64_FORM.test(encoded) || encoded.length % 4 !== 0)
      throw new KeyFileError(`${where}: the key of "${id}" is not valid base64`);
    const key = Buffer.from(encoded, 'base64');
    if (key.length !== KEY_BYTES)
      throw new KeyFileError(`${where}: the key of "${id}" is ${key.length} bytes, expected ${KEY_BYTES}`);
    if (keys.some((k) => k.id === id)) throw new KeyFileError(`${where}: key id "${id}" is listed twice`);
    keys.push({ id, key, index, decryptOnly: marker === DECRYPT_ONLY });
  }
  return keys;
}

/** Parses a key file's text (`file` only names it in errors). */
export function parseKeyFile(text: string, file: string): KeyRing {
  const keys = keyLines(text, file);
  if (keys.length === 0) throw new KeyFileError(`${file}: no key in the file (expected lines "<keyId> <base64>")`);
  const current = keys.find((k) => !k.decryptOnly);
  if (!current)
    throw new KeyFileError(
      `${file}: every key is ${DECRYPT_ONLY}: promote one to encrypt with (docs-admin keygen --promote KEYID)`,
    );
  return {
    current: { id: current.id, key: current.key },
    byId: new Map(keys.map((k) => [k.id, k.key])),
    decryptOnly: new Set(keys.filter((k) => k.decryptOnly).map((k) => k.id)),
  };
}

/** A new key file line: a key id from the date and 4 random bytes, and 32 random bytes in base64. */
export function generateKeyLine(now = new Date()): string {
  const day = now.toISOString().slice(0, 10).replace(/-/g, '');
  return `k${day}-${randomBytes(4).toString('hex')} ${randomBytes(KEY_BYTES).toString('base64')}`;
}

// ---- staged rotation: edits of the file's text (comments and order kept), each checked by parsing ----

function edited(lines: string[], file: string): string {
  const text = `${lines.join('\n').replace(/\n+$/, '')}\n`;
  parseKeyFile(text, file);
  return text;
}

function lineOf(keys: KeyLine[], id: string, file: string): KeyLine {
  const found = keys.find((k) => k.id === id);
  if (!found) throw new KeyFileError(`${file}: no key "${id}" in the file`);
  return found;
}

/**
 * Step 1: `line` (a generateKeyLine) appended as decrypt-only, so hosts that read the file can decrypt
 * with it before any host encrypts with it. In a file without keys it is the encrypting key.
 */
export function addKey(text: string, line: string, file: string): string {
  const keys = keyLines(text, file);
  const kept = text.trimEnd();
  const lines = kept === '' ? [] : kept.split(/\r?\n/);
  return edited([...lines, keys.length === 0 ? line : `${line} ${DECRYPT_ONLY}`], file);
}

/** Step 2: `id` becomes the encrypting key (first, unmarked); the key that encrypted before still decrypts. */
export function promoteKey(text: string, id: string, file: string): string {
  const keys = keyLines(text, file);
  const target = lineOf(keys, id, file);
  const lines = text.split(/\r?\n/);
  const first = keys[0] as KeyLine;
  const moved = `${target.id} ${target.key.toString('base64')}`;
  lines.splice(target.index, 1);
  lines.splice(first.index, 0, moved);
  return edited(lines, file);
}

/** Step 3: `id` removed (refused for the encrypting key: promote another first). */
export function dropKey(text: string, id: string, file: string): string {
  const keys = keyLines(text, file);
  const target = lineOf(keys, id, file);
  if (parseKeyFile(text, file).current.id === id)
    throw new KeyFileError(`${file}: "${id}" is the encrypting key: promote another key before dropping it`);
  const lines = text.split(/\r?\n/);
  lines.splice(target.index, 1);
  return edited(lines, file);
}

/** The key file, read at construction (a bad file throws KeyFileError) and again when it changed. */
export class KeyFile extends WatchedFile<KeyRing> {
  constructor(path: string, onProblem = (message: string) => process.emitWarning(message, 'PayloadKeyFileWarning')) {
    super(path, {
      parse: parseKeyFile,
      unreadable: (file, code, cause) =>
        new KeyFileError(`${file}: cannot read the payload key file (${code})`, { cause }),
      onProblem,
      kept: 'the keys read before',
    });
  }

  /** The keys as the file has them now (one stat; a read only when it changed). */
  keys(): KeyRing {
    return this.current();
  }
}
