// GITHUB_WEBHOOK_SECRET_FILE: one secret per line (several while a secret rotates: GitHub signs with the
// new one once it is changed there). Read again when the file's mtime, size or inode change (one stat
// per delivery, no watcher); a file left empty or unreadable keeps the secrets read last.
import { readFileSync, statSync } from 'node:fs';

export class WebhookSecrets {
  private secrets: string[];
  private stamp: string;

  constructor(readonly path: string) {
    this.stamp = this.statStamp();
    this.secrets = this.read();
    if (this.secrets.length === 0) throw new Error(`${path}: no webhook secret in the file (one per line)`);
  }

  current(): readonly string[] {
    try {
      const stamp = this.statStamp();
      if (stamp !== this.stamp) {
        const next = this.read();
        this.stamp = stamp;
        if (next.length > 0) this.secrets = next;
      }
    } catch {
      // Mid-rotation (renamed, half written): the secrets read last stay.
    }
    return this.secrets;
  }

  private read(): string[] {
    return readFileSync(this.path, 'utf8')
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
  }

  private statStamp(): string {
    const s = statSync(this.path);
    return `${s.mtimeMs}:${s.size}:${s.ino}`;
  }
}
