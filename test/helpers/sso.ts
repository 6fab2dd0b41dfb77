// The sign-on provider as `npm run sso-provider` runs it (a process) on a free loopback port, with a
// directory made by ensureDirectory in a temporary folder: for the provider's and the token source's tests.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freeLoopbackPort } from '../../src/observability/free-port';
import { ensureDirectory } from '../../sso-provider/directory';
import { waitFor } from '../../scripts/wait';

const ROOT = path.resolve(__dirname, '../..');
export const UI_REDIRECT_URI = 'http://127.0.0.1:8633/auth/sso/callback';

export interface SsoProviderProcess {
  issuer: string;
  folder: string;
  directoryFile: string;
  /** The people's passwords ensureDirectory made. */
  passwords: Record<string, string>;
  output(): string;
  /** SIGTERM, then the exit awaited (its duration in ms), the folder removed. */
  stop(): Promise<number>;
}

export async function startSsoProviderProcess(accessTokenTtlSeconds = 900): Promise<SsoProviderProcess> {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'sso-provider-'));
  const directoryFile = path.join(folder, 'directory.yaml');
  const made = ensureDirectory(directoryFile, { namespace: 'default', uiRedirectUri: UI_REDIRECT_URI });
  if (!made.created) throw new Error('a fresh folder already had a directory');
  const issuer = `http://127.0.0.1:${await freeLoopbackPort()}`;
  let output = '';
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'sso-provider/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      SSO_ISSUER: issuer,
      SSO_DIRECTORY_FILE: directoryFile,
      SSO_SIGNING_KEY_FILE: path.join(folder, 'signing-key.json'),
      SSO_ACCESS_TOKEN_TTL_SECONDS: String(accessTokenTtlSeconds),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`the provider exited: ${output}`);
      return (await fetch(`${issuer}/health`).catch(() => undefined))?.ok;
    },
    { timeoutMs: 30_000, what: 'the sign-on provider to answer /health' },
  );
  return {
    issuer,
    folder,
    directoryFile,
    passwords: made.passwords,
    output: () => output,
    stop: async () => {
      const started = Date.now();
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(folder, { recursive: true, force: true });
      return Date.now() - started;
    },
  };
}
