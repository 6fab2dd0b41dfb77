// Writes a secret file as readers want it changed: all at once (a temporary file in the same folder,
// then a rename), so a process that re-reads it on change (watched-file.ts) never sees half of it; a new
// file is mode 0600, an existing one keeps its mode.
import { chmodSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';

export function replaceSecretFile(file: string, text: string): void {
  let mode = 0o600;
  try {
    mode = statSync(file).mode & 0o777;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, text, { mode, flag: 'wx' });
    chmodSync(temporary, mode);
    renameSync(temporary, file);
  } finally {
    rmSync(temporary, { force: true });
  }
}
