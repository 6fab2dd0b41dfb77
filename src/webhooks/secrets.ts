// GITHUB_WEBHOOK_SECRET_FILE: one secret per line (several while a secret rotates: GitHub signs with the
// new one once it is changed there). Read again when it changes (src/config/watched-file.ts); a file
// left empty or unreadable keeps the secrets read last, and says so once.
import { WatchedFile } from '../config/watched-file';

function parseSecrets(text: string, file: string): string[] {
  const secrets = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  if (secrets.length === 0) throw new Error(`${file}: no webhook secret in the file (one per line)`);
  return secrets;
}

export class WebhookSecrets {
  private readonly watched: WatchedFile<string[]>;

  /** Reads the file now: a missing, unreadable or empty file throws. */
  constructor(
    readonly path: string,
    onProblem: (message: string) => void = (m) => console.error(`webhooks: ${m}`),
  ) {
    this.watched = new WatchedFile(path, {
      parse: parseSecrets,
      unreadable: (file, code) => new Error(`${file}: cannot read the webhook secrets (${code})`),
      onProblem,
      kept: 'the secrets read before',
    });
  }

  current(): readonly string[] {
    return this.watched.current();
  }
}
