// A secret file that is read again whenever it changes: looked up by path on every use (one stat, no
// watcher), read again only when its identity, size or mtime changed (why not a watch: docs/security-access.md,
// "How the file is read (`src/api/key-source.ts`)"). A change that leaves the file unusable (half written,
// a typo) keeps the value read last and is reported once; the next good version is picked up.
import { readFileSync, statSync } from 'node:fs';

export interface WatchedFileOptions<T> {
  /** The file's text to a value; throws one line naming the file (and line) on bad content. */
  parse: (text: string, file: string) => T;
  /** The error for a file that cannot be stat'ed or read (`code`: ENOENT, EACCES, ...). */
  unreadable: (file: string, code: string, cause: unknown) => Error;
  /** Told once per distinct problem with a changed file (the old value stays in use). */
  onProblem: (message: string) => void;
  /** What stays in use, for the problem's message: e.g. `the keys read before`. */
  kept: string;
}

export class WatchedFile<T> {
  private value: T;
  private stamp: string;
  private lastProblem: string | undefined;

  /** Reads the file now: a missing, unreadable or bad file throws. */
  constructor(
    readonly path: string,
    private readonly options: WatchedFileOptions<T>,
  ) {
    this.stamp = this.statStamp();
    this.value = this.read();
  }

  /** The value as the file has it now. */
  current(): T {
    try {
      const stamp = this.statStamp();
      if (stamp !== this.stamp) {
        this.value = this.read();
        this.stamp = stamp;
        this.lastProblem = undefined;
      }
    } catch (err) {
      const message = `${(err as Error).message}; still using ${this.options.kept}`;
      if (message !== this.lastProblem) this.options.onProblem(message);
      this.lastProblem = message;
    }
    return this.value;
  }

  private statStamp(): string {
    const s = this.io(() => statSync(this.path, { bigint: true }));
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}`;
  }

  private read(): T {
    return this.options.parse(
      this.io(() => readFileSync(this.path, 'utf8')),
      this.path,
    );
  }

  private io<R>(fn: () => R): R {
    try {
      return fn();
    } catch (err) {
      throw this.options.unreadable(this.path, (err as NodeJS.ErrnoException).code ?? String(err), err);
    }
  }
}
