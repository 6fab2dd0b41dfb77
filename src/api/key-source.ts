// Where the admin key comes from: ADMIN_API_KEY (fixed for the life of the process) or ADMIN_API_KEY_FILE
// (a mounted secret that rotates without a restart; read by path on every call, and why: docs/security-access.md,
// "How the file is read (`src/api/key-source.ts`)"). A 401 forces one more read: the key may have been
// rotated within the stat's resolution.
import { readFileSync, statSync } from 'node:fs';
import { checkAdminApiKey } from './credentials';

export interface AdminKeySource {
  /** The key to send now. */
  current(): string;
  /**
   * Called after `rejected` got a 401: reads the file again and returns the key to retry with when it
   * differs from `rejected`, else undefined (a fixed key never changes).
   */
  afterUnauthorized(rejected: string): string | undefined;
  /** Every key this source has handed out, for redaction. */
  readonly seen: readonly string[];
}

/** A key given once (ADMIN_API_KEY, or a client built by a test). */
export function fixedKey(key: string): AdminKeySource {
  return { current: () => key, afterUnauthorized: () => undefined, seen: [key] };
}

/** Reads a key file: content trimmed (a trailing newline is usual), checked; problems never echo it. */
export function readKeyFile(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new Error(`ADMIN_API_KEY_FILE: cannot read ${file} (${code})`, { cause: err });
  }
  const key = text.trim();
  const problem = checkAdminApiKey(key);
  if (problem) throw new Error(`ADMIN_API_KEY_FILE: ${file}: ${problem.replace(/^ADMIN_API_KEY /, 'the key ')}`);
  return key;
}

export interface FileKeyOptions {
  /** Told (without the key) when a new key was picked up, or a change could not be read. */
  onChange?: (event: { file: string; rotated: boolean; problem?: string }) => void;
}

/**
 * A key read from `file`, kept fresh: a changed file is read again before the next call. A file that
 * is momentarily empty or unreadable (being rewritten in place) keeps the last good key; the next call
 * tries again. The first read happens here and throws a clear error (missing file, bad content).
 */
export function fileKey(file: string, options: FileKeyOptions = {}): AdminKeySource {
  const seen: string[] = [];
  let key = readKeyFile(file);
  let stamp = fileStamp(file);
  seen.push(key);

  const reload = (force: boolean): void => {
    const now = fileStamp(file);
    if (!force && now === stamp) return;
    try {
      const next = readKeyFile(file);
      stamp = now;
      if (next === key) return;
      key = next;
      if (!seen.includes(next)) seen.push(next);
      options.onChange?.({ file, rotated: true });
    } catch (err) {
      options.onChange?.({ file, rotated: false, problem: (err as Error).message });
    }
  };

  return {
    current() {
      reload(false);
      return key;
    },
    afterUnauthorized(rejected) {
      reload(true);
      return key !== rejected ? key : undefined;
    },
    seen,
  };
}

/** Identity of the file's current content as seen through the path (stat follows the symlink). */
function fileStamp(file: string): string {
  try {
    const s = statSync(file, { bigint: true });
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}`;
  } catch {
    return 'missing';
  }
}
