// `npm run emulator [-- --port N] [--host H]`: the admin API emulator as a standalone process (default
// 127.0.0.1:4010). Environment: EMULATOR_HOST and EMULATOR_PORT (behind the flags), EMULATOR_PUBLIC_URL,
// EMULATOR_AGENT_ACTIVE_MS, EMULATOR_EXPORT_QUEUED_MS, EMULATOR_EXPORT_DURATION_MS, EMULATOR_EXPORT_PAGES,
// EMULATOR_UPDATE_BUILD_MS, EMULATOR_PROGRESS_SHAPE (linear|slow-start|stall-at-99|jumps),
// EMULATOR_RATE_LIMIT_COUNT, EMULATOR_RATE_LIMIT_WINDOW_MS, EMULATOR_RETRY_AFTER (seconds|http-date|none),
// EMULATOR_BUNDLE_TTL_MS, EMULATOR_NON_ENTERPRISE_KEYS, EMULATOR_VALID_KEYS, EMULATOR_READ_ONLY_KEYS,
// EMULATOR_IP_ALLOWLIST (comma-separated), EMULATOR_SEED, EMULATOR_LOG_REQUESTS=1.
// Faults and counters at runtime: POST /_emulator/faults, GET /_emulator/counters, POST /_emulator/reset;
// a key rotation: POST /_emulator/keys {"add": [...], "revoke": [...]}; a push to a project's deployment
// branch: POST /_emulator/push {"projectId", "domain"?, "sha"?, "message"?, "author"?, "filesChanged"?:
// {"added"?, "modified"?, "removed"?}} (lists of paths, as update-status documents them).
import { Settings } from '../src/process/small-server';
import { DEFAULT_OPTIONS as D, type EmulatorOptions, type ProgressShape, type RetryAfterForm } from './options';
import { Emulator } from './server';

const USAGE = 'usage: npm run emulator [-- --port N] [--host H]';
const SHAPES: readonly ProgressShape[] = ['linear', 'slow-start', 'stall-at-99', 'jumps'];
const RETRY_AFTER_FORMS: readonly RetryAfterForm[] = ['seconds', 'http-date', 'none'];

/** The options of argv and the environment; throws one line naming the flag or variable at fault. */
function emulatorOptions(argv: string[], env: NodeJS.ProcessEnv): Partial<EmulatorOptions> {
  const read = new Settings(env, { args: argv, flags: { port: 'string', host: 'string' }, usage: USAGE });
  const ms = (name: string, fallback: number, min = 0) => read.int(name, fallback, { min, unit: 'milliseconds' });
  return {
    host: read.text(['--host', 'EMULATOR_HOST']) ?? D.host,
    port: read.int(['--port', 'EMULATOR_PORT'], D.port, { max: 65_535 }),
    publicUrl: read.text('EMULATOR_PUBLIC_URL'),
    agentActiveMs: ms('EMULATOR_AGENT_ACTIVE_MS', D.agentActiveMs),
    exportQueuedMs: ms('EMULATOR_EXPORT_QUEUED_MS', D.exportQueuedMs),
    exportDurationMs: ms('EMULATOR_EXPORT_DURATION_MS', D.exportDurationMs),
    exportTotalPages: read.int('EMULATOR_EXPORT_PAGES', D.exportTotalPages, { min: 1 }),
    updateBuildMs: ms('EMULATOR_UPDATE_BUILD_MS', D.updateBuildMs),
    progressShape: read.oneOf('EMULATOR_PROGRESS_SHAPE', SHAPES) ?? D.progressShape,
    retryAfterForm: read.oneOf('EMULATOR_RETRY_AFTER', RETRY_AFTER_FORMS) ?? D.retryAfterForm,
    bundleTtlMs: ms('EMULATOR_BUNDLE_TTL_MS', D.bundleTtlMs, 1),
    seed: read.int('EMULATOR_SEED', D.seed),
    rateLimit: {
      limit: read.int('EMULATOR_RATE_LIMIT_COUNT', D.rateLimit.limit, { min: 1 }),
      windowMs: ms('EMULATOR_RATE_LIMIT_WINDOW_MS', D.rateLimit.windowMs, 1),
    },
    nonEnterpriseKeys: read.list('EMULATOR_NON_ENTERPRISE_KEYS'),
    validKeys: read.list('EMULATOR_VALID_KEYS'),
    readOnlyKeys: read.list('EMULATOR_READ_ONLY_KEYS'),
    ipAllowlist: read.list('EMULATOR_IP_ALLOWLIST'),
    logRequests: read.text('EMULATOR_LOG_REQUESTS') === '1',
  };
}

async function main(): Promise<void> {
  const emulator = new Emulator(emulatorOptions(process.argv.slice(2), process.env));
  await emulator.listen();
  process.stdout.write(`admin API emulator listening on ${emulator.url}\n`);
  const stop = (): void => {
    emulator.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`emulator: ${(err as Error).message}\n`);
  process.exit(1);
});
