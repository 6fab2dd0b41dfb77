// `npm run codec-server [-- --port N] [--host H] [--no-auth]`: the codec server (src/codec/server.ts)
// with the keys of PAYLOAD_ENCRYPTION_KEYS_FILE, for `temporal --codec-endpoint` and the Web UI. Its
// settings (the CODEC_SERVER_* variables) and answers are the contract's: docs/contract.md, under "Security".
import { readFileSync } from 'node:fs';
import { KEYS_FILE_VAR, payloadEncryption } from './codec';
import { startTracing, stopTracing } from './observability/tracing';
import { type CodecServerOptions, DEFAULT_CODEC_SERVER_PORT, isNamespaceName, startCodecServer } from './codec/server';
import { MIN_TOKEN_CHARS, TOKEN_FILE_VAR, tokenFile } from './codec/token-file';
import { OIDC_AUDIENCE_VAR, OIDC_ISSUER_VAR, type OidcSettings, oidcVerifier } from './codec/oidc-tokens';
import { DEFAULT_TOKEN_AUDIENCE } from './shared/roles';
import { DEFAULT_NAMESPACE } from './shared/defaults';
import { runAsEntryPoint, stopOnSignal } from './process/lifecycle';
import { Settings } from './process/small-server';

const USAGE = 'usage: npm run codec-server [-- --port N] [--host H] [--no-auth]';

/** Fixed tokens: those of a file, one token, or none (sign-on tokens only, or --no-auth). */
export type TokenSource = { file: string } | { token: string } | 'none';

export interface CodecServerSettings extends Pick<
  CodecServerOptions,
  'host' | 'port' | 'corsOrigins' | 'namespaces' | 'defaultNamespace'
> {
  keysFile: string;
  tokenSource: TokenSource;
  /** The sign-on provider whose access tokens are accepted too, if any. */
  oidc: OidcSettings | undefined;
  /** The PEM files of the HTTPS certificate and its key, if it serves HTTPS. */
  tlsFiles: { cert: string; key: string } | undefined;
}

const NAMESPACES_VAR = 'CODEC_SERVER_NAMESPACES';
const TLS_CERT_VAR = 'CODEC_SERVER_TLS_CERT_FILE';
const TLS_KEY_VAR = 'CODEC_SERVER_TLS_KEY_FILE';

function tlsFilesOf(read: Settings): CodecServerSettings['tlsFiles'] {
  const cert = read.text(TLS_CERT_VAR);
  const key = read.text(TLS_KEY_VAR);
  if (!cert && !key) return undefined;
  if (!cert || !key) throw new Error(`set both ${TLS_CERT_VAR} and ${TLS_KEY_VAR}, or neither`);
  return { cert, key };
}

/** The certificate and key, read now; one line naming the variable when a file cannot be read. */
function readTls(files: NonNullable<CodecServerSettings['tlsFiles']>): CodecServerOptions['tls'] {
  const read = (name: string, file: string) => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new Error(`${name} (${file}): cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`, {
        cause: err,
      });
    }
  };
  return { cert: read(TLS_CERT_VAR, files.cert), key: read(TLS_KEY_VAR, files.key) };
}

/**
 * The namespaces served (CODEC_SERVER_NAMESPACES, else the one of TEMPORAL_NAMESPACE) and the one a
 * request without X-Namespace means (TEMPORAL_NAMESPACE, else the first served), which must be served.
 */
function namespacesOf(read: Settings): Pick<CodecServerSettings, 'namespaces' | 'defaultNamespace'> {
  const listed = read.list(NAMESPACES_VAR);
  const [source, namespaces] = listed.length
    ? [NAMESPACES_VAR, [...new Set(listed)]]
    : ['TEMPORAL_NAMESPACE', [read.text('TEMPORAL_NAMESPACE') ?? DEFAULT_NAMESPACE]];
  const bad = namespaces.find((n) => !isNamespaceName(n));
  if (bad !== undefined) throw new Error(`${source}: ${JSON.stringify(bad)} is not a namespace name`);
  const defaultNamespace = read.text('TEMPORAL_NAMESPACE') ?? (namespaces[0] as string);
  if (!namespaces.includes(defaultNamespace))
    throw new Error(
      `TEMPORAL_NAMESPACE (${defaultNamespace}) is not one of ${NAMESPACES_VAR} (${namespaces.join(', ')}): ` +
        'the requests without X-Namespace (the temporal CLI) would all be refused',
    );
  return { namespaces, defaultNamespace };
}

function tokenSourceOf(noAuth: boolean, read: Settings): TokenSource {
  const file = read.text(TOKEN_FILE_VAR);
  const token = read.text('CODEC_SERVER_TOKEN');
  if (file && token) throw new Error(`set CODEC_SERVER_TOKEN or ${TOKEN_FILE_VAR}, not both`);
  if (noAuth && (file || token))
    throw new Error(`--no-auth and a token (${file ? TOKEN_FILE_VAR : 'CODEC_SERVER_TOKEN'}) are both given`);
  if (file) return { file };
  if (token) {
    if (token.length < MIN_TOKEN_CHARS)
      throw new Error(`CODEC_SERVER_TOKEN is shorter than ${MIN_TOKEN_CHARS} characters`);
    return { token };
  }
  return 'none';
}

function oidcOf(noAuth: boolean, read: Settings): OidcSettings | undefined {
  const issuer = read.text(OIDC_ISSUER_VAR);
  if (!issuer) return undefined;
  if (noAuth) throw new Error(`--no-auth and ${OIDC_ISSUER_VAR} are both given`);
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new Error(`${OIDC_ISSUER_VAR} is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new Error(`${OIDC_ISSUER_VAR} is not an http(s) URL`);
  return { issuer, audience: read.text(OIDC_AUDIENCE_VAR) ?? DEFAULT_TOKEN_AUDIENCE };
}

/** The server's settings from argv and the environment; throws one line on a bad setting. */
export function codecServerSettings(argv: string[], env: NodeJS.ProcessEnv): CodecServerSettings {
  const flags = { port: 'string', host: 'string', 'no-auth': 'boolean' } as const;
  const read = new Settings(env, { args: argv, flags, usage: USAGE });
  const port = read.int('--port', DEFAULT_CODEC_SERVER_PORT, { max: 65_535 });
  const host = read.text('--host') ?? '127.0.0.1';
  const keysFile = read.required(KEYS_FILE_VAR, 'the codec server needs the payload keys');
  const corsOrigins = read.list('CODEC_SERVER_CORS_ORIGINS').map((o) => o.replace(/\/$/, ''));
  const noAuth = read.has('--no-auth');
  const tokenSource = tokenSourceOf(noAuth, read);
  const oidc = oidcOf(noAuth, read);
  if (!noAuth && tokenSource === 'none' && oidc === undefined)
    throw new Error(
      `no token: set ${TOKEN_FILE_VAR} (bearer tokens, one a line) or ${OIDC_ISSUER_VAR} (the sign-on provider), ` +
        'or pass --no-auth to let anyone who reaches the server decode',
    );
  return { port, host, keysFile, corsOrigins, tokenSource, oidc, ...namespacesOf(read), tlsFiles: tlsFilesOf(read) };
}

function tokensOf(source: TokenSource, log: (line: string) => void): (() => readonly string[]) | undefined {
  if (source === 'none') return undefined;
  if ('token' in source) return () => [source.token];
  return tokenFile(source.file, (problem) => log(`codec-server: ${problem}`));
}

export async function main(argv = process.argv.slice(2), env = process.env): Promise<void> {
  const { tokenSource, oidc, keysFile, tlsFiles, ...settings } = codecServerSettings(argv, env);
  const tls = tlsFiles && readTls(tlsFiles);
  await startTracing(env, 'docs-admin-codec-server');
  const log = (line: string) => console.error(line);
  const tokens = tokensOf(tokenSource, log);
  const accessTokens = oidc && oidcVerifier(oidc);
  const auth = tokens || accessTokens ? { tokens, accessTokens } : undefined;
  const { codec } = payloadEncryption(keysFile);
  const server = await startCodecServer({ ...settings, codec, auth, tls, log }).catch((err: unknown) => {
    // A file that is not a PEM certificate or key fails here, with OpenSSL's reason.
    throw tls ? new Error(`${TLS_CERT_VAR}, ${TLS_KEY_VAR}: ${(err as Error).message}`, { cause: err }) : err;
  });
  if (auth === undefined)
    log(`codec-server: warning: --no-auth: anyone who reaches ${server.url} can decode every payload`);
  const fixed = tokenSource === 'none' ? [] : ['file' in tokenSource ? `bearer (${tokenSource.file})` : 'bearer'];
  const signOn = oidc ? [`access tokens of ${oidc.issuer} (aud ${oidc.audience})`] : [];
  const who = [...fixed, ...signOn].join(', ') || 'none (--no-auth)';
  console.log(
    `codec server on ${server.url} (POST /encode, /decode); keys ${keysFile}; ` +
      `browser origins: ${settings.corsOrigins.join(', ') || 'none'}; token: ${who}; ` +
      `namespaces: ${settings.namespaces.join(', ')}`,
  );
  stopOnSignal(
    () => server.close(),
    () => stopTracing(),
  );
}

if (require.main === module) runAsEntryPoint('codec-server', () => main());
