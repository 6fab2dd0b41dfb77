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

/** The secrets, read now (a missing, unreadable or empty file throws) and again when the file changed. */
export class WebhookSecrets extends WatchedFile<string[]> {
  constructor(path: string, onProblem = (message: string) => console.error(`webhooks: ${message}`)) {
    super(path, {
      parse: parseSecrets,
      unreadable: (file, code) => new Error(`${file}: cannot read the webhook secrets (${code})`),
      onProblem,
      kept: 'the secrets read before',
    });
  }
}
