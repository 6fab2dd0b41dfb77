// The codec server's bearer tokens (CODEC_SERVER_TOKEN_FILE): one token a line, blank lines and `#`
// comments ignored. Several lines let a token rotate without a gap: add the new one, move the callers,
// remove the old one; the file is read again whenever it changes (config/watched-file.ts).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { WatchedFile } from '../config/watched-file';

export const TOKEN_FILE_VAR = 'CODEC_SERVER_TOKEN_FILE';
/** Shorter tokens are refused: a token stands between the network and every decoded payload. */
export const MIN_TOKEN_CHARS = 16;
const TOKEN_FORM = /^[\x21-\x7e]+$/;

export class TokenFileError extends Error {
  override readonly name = 'TokenFileError';
}

/** The tokens of a file's text (`file` only names it in errors, which never hold a token). */
export function parseTokenFile(text: string, file: string): string[] {
  const tokens: string[] = [];
  for (const [index, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const where = `${file} line ${index + 1}`;
    if (!TOKEN_FORM.test(line)) throw new TokenFileError(`${where}: a token is printable ASCII without spaces`);
    if (line.length < MIN_TOKEN_CHARS)
      throw new TokenFileError(`${where}: the token is shorter than ${MIN_TOKEN_CHARS} characters`);
    tokens.push(line);
  }
  if (tokens.length === 0) throw new TokenFileError(`${file}: no token in the file (one token a line)`);
  return tokens;
}

/** A new token: 32 random bytes, base64url (43 characters). */
export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

/** The token of `Authorization: Bearer <token>` (the scheme is case-insensitive), or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  return /^Bearer +(\S+)\s*$/i.exec(header ?? '')?.[1];
}

/**
 * Whether `given` is one of `tokens`. Compared as SHA-256 digests with timingSafeEqual, every token
 * each time: the time taken says nothing of a token's length or prefix.
 */
export function tokenMatches(given: string, tokens: readonly string[]): boolean {
  const givenDigest = digest(given);
  let found = false;
  for (const token of tokens) found = timingSafeEqual(givenDigest, digest(token)) || found;
  return found;
}

/** The token file, read now (a bad file throws TokenFileError) and again whenever it changed. */
export function tokenFile(path: string, onProblem: (message: string) => void): () => readonly string[] {
  const file = new WatchedFile(path, {
    parse: parseTokenFile,
    unreadable: (name, code, cause) => new TokenFileError(`${name}: cannot read the token file (${code})`, { cause }),
    onProblem,
    kept: 'the tokens read before',
  });
  return () => file.current();
}
