// test-lane: cluster-alone (switches the shared cluster to TLS and back)
// Mutual TLS end to end on the production-shaped cluster: this file switches the shared cluster to
// `npm run cluster -- --tls` (the server and the UI server restart; PostgreSQL and the data stay), runs
// the product's worker process, the CLI, the client library, the Temporal CLI and a Python SDK caller
// over mTLS with the TEMPORAL_TLS_* variables the cluster prints, checks that clients without a
// certificate are refused with one line, and always switches the cluster back to plain mode at the end
// (`npm test` runs one file at a time, so no other file sees the TLS window); run alone, it stops what it started.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type EmulatorHandle, startEmulator } from '../../emulator';
import { type ClusterComponent, ensureCluster, stopCluster } from '../../scripts/cluster/control';
import { CLUSTER_ADDRESS } from '../../scripts/cluster/layout';
import { DATA_DIR, findTemporalCli } from '../../scripts/tools';
import { connectClient } from '../../src/connection';
import { WorkerProcess } from '../chaos/helpers';
import { clusterSkipReason, uniqueTaskQueue } from '../helpers/temporal';

const ROOT = path.resolve(__dirname, '../..');
const KEY = 'mint_cluster_tls_e2e_key_0123456789';
const VENV = path.join(DATA_DIR, 'python-venv');

interface Run {
  code: number;
  /** The signal that ended the process, if one did. */
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const run = (command: string, args: string[], env: NodeJS.ProcessEnv, timeout = 90_000): Promise<Run> =>
  new Promise((resolve) => {
    execFile(command, args, { cwd: ROOT, env, timeout }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, signal: err?.signal ?? null, stdout, stderr });
    });
  });

/** What a failed run said, for an assertion's message (a crash may leave stderr empty). */
const said = (r: Run): string =>
  `exit ${r.code}${r.signal ? ` (${r.signal})` : ''}; stderr: ${r.stderr.trim() || '(none)'}; stdout: ${r.stdout.trim() || '(none)'}`;

const lastJson = (text: string): Record<string, unknown> =>
  JSON.parse(text.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;

const oneLine = (result: Run, reason: RegExp) => {
  assert.notEqual(result.code, 0);
  const lines = result.stderr.trim().split('\n');
  assert.equal(lines.length, 1, `one line on stderr, got:\n${result.stderr}`);
  assert.match(lines[0]!, reason);
};

describe('mutual TLS to Temporal (npm run cluster -- --tls)', { skip: clusterSkipReason() }, () => {
  const taskQueue = uniqueTaskQueue('tls');
  const tag = taskQueue.slice(-12);
  let emu: EmulatorHandle | undefined;
  let worker: WorkerProcess | undefined;
  let tlsEnv: Record<string, string> = {};
  /** What every client process starts from: no TEMPORAL_TLS_* of this process's own. */
  const base = (): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH ?? '',
    HOME: '/nonexistent',
    TEMPORAL_ADDRESS: CLUSTER_ADDRESS,
    TEMPORAL_TASK_QUEUE: taskQueue,
  });
  const cli = (args: string[], env: NodeJS.ProcessEnv) =>
    run(process.execPath, ['--import', 'tsx', 'src/starter.ts', ...args], env);

  /** What was down before this file (a run of it alone): stopped again at the end. */
  let startedHere: ClusterComponent[] = [];

  /** The Python venv, made (a first run: pip) while the cluster switches to TLS; why it cannot run, if so. */
  let python: Promise<string | undefined> = Promise.resolve('the Python venv was not prepared');

  before(async () => {
    python = pythonUnavailable().catch((err: unknown) => `the Python venv failed: ${String(err)}`);
    startedHere = (await ensureCluster()).started;
    const ensured = await ensureCluster({ tls: true });
    assert.equal(ensured.tls, true);
    tlsEnv = ensured.clientEnv;
    emu = await startEmulator({ agentActiveMs: 300, exportQueuedMs: 100, exportDurationMs: 800 });
    worker = await WorkerProcess.start({
      env: {
        ...base(),
        ...tlsEnv,
        ADMIN_API_URL: emu.url,
        ADMIN_API_KEY: KEY,
        AGENT_RATE_LIMIT: '100/10s',
        METRICS_PORT: '0',
        LOG_FORMAT: 'json',
      },
    });
  });

  after(async () => {
    await worker?.kill();
    await emu?.close();
    // Whatever happened above: the shared cluster goes back to its plain production defaults.
    const plain = await ensureCluster({ tls: false });
    assert.equal(plain.tls, false);
    if (startedHere.length > 0 && process.env.DOCS_ADMIN_KEEP_CLUSTER !== '1')
      await stopCluster(() => undefined, startedHere);
  });

  test('the worker and the CLI run an agent job and an export end to end over mTLS', async () => {
    // Two CLI processes side by side: the job and the export have nothing to do with each other.
    const [agent, exported] = await Promise.all([
      cli(['agent', '--project', `tls-${tag}`, '--prompt', 'Document TLS', '--wait', '--json'], {
        ...base(),
        ...tlsEnv,
      }),
      cli(['export', '--domain', `tls-${tag}.example.com`, '--wait', '--json'], { ...base(), ...tlsEnv }),
    ]);
    assert.equal(agent.code, 0, said(agent));
    assert.equal(lastJson(agent.stdout).status, 'completed');
    assert.equal(exported.code, 0, said(exported));
    assert.match(String(lastJson(exported.stdout).bundleUrl), /^http:\/\/127\.0\.0\.1:\d+\//);
  });

  test('the client library and the Temporal CLI connect with the same variables', async () => {
    const client = await connectClient({ ...base(), ...tlsEnv });
    try {
      const info = await client.workflowService.getSystemInfo({});
      assert.ok(info.serverVersion);
    } finally {
      await client.connection.close();
    }
    const temporal = findTemporalCli();
    assert.ok(temporal);
    const listed = await run(temporal, ['workflow', 'list', '--limit', '1', '--address', CLUSTER_ADDRESS], {
      ...base(),
      ...tlsEnv,
    });
    assert.equal(listed.code, 0, said(listed));
    const refused = await run(temporal, ['workflow', 'list', '--limit', '1', '--address', CLUSTER_ADDRESS], base());
    assert.notEqual(refused.code, 0, 'the Temporal CLI without a certificate is refused');
  });

  test('a client without a certificate is refused with one line naming what to set', async () => {
    // Three refused processes side by side (each is a Node start of its own).
    const [plain, caOnly, certless] = await Promise.all([
      cli(['status', `agent-${tag}`], base()),
      cli(['status', `agent-${tag}`], {
        ...base(),
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: tlsEnv.TEMPORAL_TLS_SERVER_CA_CERT_PATH,
        TEMPORAL_TLS_SERVER_NAME: tlsEnv.TEMPORAL_TLS_SERVER_NAME,
      }),
      run(process.execPath, ['--import', 'tsx', 'src/worker.ts'], {
        ...base(),
        ADMIN_API_URL: emu!.url,
        ADMIN_API_KEY: KEY,
        METRICS_PORT: '0',
      }),
    ]);
    oneLine(
      plain,
      /^error: TLS handshake refused by 127\.0\.0\.1:7633: the server requires a client certificate \(set TEMPORAL_TLS_CLIENT_CERT_PATH/,
    );
    oneLine(caOnly, /^error: TLS handshake refused .* requires a client certificate/);
    assert.notEqual(certless.code, 0);
    assert.match(certless.stdout + certless.stderr, /TLS handshake refused .* requires a client certificate/);
  });

  test('a Python SDK caller starts an agentJob by type name with plain JSON over mTLS', async (t) => {
    const reason = await python;
    if (reason) return t.skip(reason);
    const result = await run(
      path.join(VENV, 'bin', 'python'),
      ['test/fixtures/python/start_agent_job.py', taskQueue, `python-tls-${tag}`, `tls-py-${tag}`, 'From Python'],
      { ...base(), ...tlsEnv },
    );
    assert.equal(result.code, 0, said(result));
    const job = lastJson(result.stdout);
    assert.equal(job.status, 'completed');
    assert.match(String(job.prLink), /\/pull\/\d+$/);
  });
});

/**
 * Why the Python caller cannot run here, or undefined once a venv under .data has the temporalio package
 * (made with `python3 -m venv` and `pip install temporalio` on the first run, reused after).
 */
async function pythonUnavailable(): Promise<string | undefined> {
  const python = path.join(VENV, 'bin', 'python');
  const has = async () =>
    existsSync(python) && (await run(python, ['-c', 'import temporalio.envconfig'], process.env)).code === 0;
  if (await has()) return undefined;
  const venv = await run('python3', ['-m', 'venv', VENV], process.env);
  if (venv.code !== 0) return `python3 -m venv is unavailable (${said(venv)})`;
  const pip = await run(path.join(VENV, 'bin', 'pip'), ['install', '-q', 'temporalio'], process.env, 300_000);
  if (pip.code !== 0) return `pip install temporalio failed (${pip.stderr.trim().split('\n').at(-1) || said(pip)})`;
  return (await has()) ? undefined : 'temporalio installed but temporalio.envconfig does not import';
}
