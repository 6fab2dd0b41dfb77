// `npm run codec-server [-- --port N] [--host H]`: the codec server (src/codec/server.ts) with the keys
// of PAYLOAD_ENCRYPTION_KEYS_FILE, for the Web UI (codec endpoint) and `temporal --codec-endpoint`.
//   CODEC_SERVER_CORS_ORIGINS   comma list of the Web UI origins a browser may call from
//   CODEC_SERVER_TOKEN(_FILE)   a bearer token every request must carry (optional)
import { readFileSync } from 'node:fs';
import { KEYS_FILE_VAR, payloadEncryption } from './codec';
import { startTracing, stopTracing } from './observability/tracing';
import { type CodecServerOptions, DEFAULT_CODEC_SERVER_PORT, startCodecServer } from './codec/server';

const USAGE = 'usage: npm run codec-server [-- --port N] [--host H]';

/** The server's options from argv and the environment; throws one line on a bad setting. */
export function codecServerSettings(
  argv: string[],
  env: NodeJS.ProcessEnv,
): Omit<CodecServerOptions, 'codec' | 'log'> & { keysFile: string } {
  let port = DEFAULT_CODEC_SERVER_PORT;
  let host = '127.0.0.1';
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--port' && value !== undefined && /^\d+$/.test(value) && Number(value) < 65536) port = Number(value);
    else if (flag === '--host' && value) host = value;
    else throw new Error(USAGE);
  }
  const keysFile = env[KEYS_FILE_VAR];
  if (!keysFile) throw new Error(`${KEYS_FILE_VAR} is not set: the codec server needs the payload keys`);
  if (env.CODEC_SERVER_TOKEN && env.CODEC_SERVER_TOKEN_FILE)
    throw new Error('set CODEC_SERVER_TOKEN or CODEC_SERVER_TOKEN_FILE, not both');
  const token = env.CODEC_SERVER_TOKEN_FILE
    ? readFileSync(env.CODEC_SERVER_TOKEN_FILE, 'utf8').trim()
    : env.CODEC_SERVER_TOKEN || undefined;
  if (token === '') throw new Error(`CODEC_SERVER_TOKEN_FILE ${env.CODEC_SERVER_TOKEN_FILE} is empty`);
  const corsOrigins = (env.CODEC_SERVER_CORS_ORIGINS ?? '')
    .split(',')
    .map((o) => o.trim().replace(/\/$/, ''))
    .filter(Boolean);
  return { port, host, keysFile, token, corsOrigins };
}

export async function main(argv = process.argv.slice(2), env = process.env): Promise<void> {
  const settings = codecServerSettings(argv, env);
  await startTracing(env, 'docs-admin-codec-server');
  const { codec } = payloadEncryption(settings.keysFile);
  const server = await startCodecServer({ ...settings, codec, log: (line) => console.error(line) });
  console.log(
    `codec server on ${server.url} (POST /encode, /decode); keys ${settings.keysFile}; ` +
      `browser origins: ${settings.corsOrigins.join(', ') || 'none'}; token: ${settings.token ? 'required' : 'none'}`,
  );
  const stop = () =>
    void server
      .close()
      .then(() => stopTracing())
      .then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(`codec-server: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
