// `npm start`: the whole product on one machine. Starts (or reuses) the Temporal dev server, the admin
// API emulator and a worker, runs one static export and one agent job end to end, prints their results
// and the Web UI links. In a terminal it then keeps everything up for browsing until Ctrl-C; elsewhere
// (CI, a pipe) it shuts down at once. Ctrl-C at any point shuts everything down cleanly.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { awaitAgentJob, runExport, startAgentJob } from '../src/client';
import { loadWorkerConfig } from '../src/config';
import { startEmulator, type EmulatorHandle } from '../emulator';
import { DEFAULT_NAMESPACE } from '../src/shared/defaults';
import { createDocsAdminWorker, installRuntime, type DocsAdminWorker } from '../src/worker';
import { ADDRESS, isHealthy, startDevServer, UI_URL } from './dev-server';
import { ensureTools } from './tools';
import { payloadEncryptionFromEnv } from '../src/codec';

const DOMAIN = 'docs.example.com';
const PROJECT = 'demo-project';
const PROMPT = 'Document the rate limits of the agent API on the quickstart page';

const say = (line: string) => console.log(line);
const workflowLink = (workflowId: string) =>
  `${UI_URL}/namespaces/${DEFAULT_NAMESPACE}/workflows/${encodeURIComponent(workflowId)}`;

interface Running {
  server?: ChildProcess;
  emulator?: EmulatorHandle;
  worker?: DocsAdminWorker;
  connection?: Connection;
  /** The demo's sinks file and the deployment config its one sink writes. */
  sinksDir?: string;
}

async function shutdown(running: Running): Promise<void> {
  await running.connection?.close().catch(() => undefined);
  await running.worker?.close().catch(() => undefined);
  await running.emulator?.close().catch(() => undefined);
  if (running.sinksDir) rmSync(running.sinksDir, { recursive: true, force: true });
  const server = running.server;
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
}

async function main(running: Running, interrupted: Promise<void>): Promise<void> {
  const { client, taskQueue, workerDone } = await startEverything(running);
  const { both } = await startBoth(client, taskQueue);
  const outcome = await Promise.race([both, interrupted.then(() => undefined)]);
  if (!outcome) return;
  printResults(...outcome);

  const interactive = process.stdout.isTTY && process.stdin.isTTY && !process.env.CI;
  if (interactive) {
    say(`\nEverything stays up for browsing: ${UI_URL}   (Ctrl-C to stop)`);
    await Promise.race([interrupted, workerDone]);
  }
}

/** The dev server (reused when one is up), the emulator, a worker and a client; each recorded in `running`. */
async function startEverything(
  running: Running,
): Promise<{ client: Client; taskQueue: string; workerDone: Promise<void> }> {
  const { cli } = await ensureTools();
  if (!cli) throw new Error('no Temporal CLI and no Go to build it: install Go, or set TEMPORAL_CLI');

  if (isHealthy(cli)) {
    say(`Temporal dev server: reusing the one at ${ADDRESS}`);
  } else {
    say(`Temporal dev server: starting at ${ADDRESS} ...`);
    running.server = await startDevServer(cli, { detached: false });
  }

  running.emulator = await startEmulator({ agentActiveMs: 6_000, exportQueuedMs: 1_500, exportDurationMs: 8_000 });
  say(`Admin API emulator: ${running.emulator.url}`);

  // The key is the worker's alone: it goes into the worker's config, never into a workflow input.
  const config = loadWorkerConfig({
    ...process.env,
    KEEPER_SINKS_FILE: process.env.KEEPER_SINKS_FILE ?? demoSinksFile(running),
    ADMIN_API_URL: running.emulator.url,
    ADMIN_API_KEY: `mint_demo_${randomBytes(12).toString('hex')}`,
    TEMPORAL_ADDRESS: ADDRESS,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'WARN',
  });
  await installRuntime({ logLevel: config.logLevel, secrets: [config.adminApiKey] });
  running.worker = await createDocsAdminWorker(config, { metricsListen: { port: 0 } });
  const workerDone = running.worker.run();
  say(`Worker: task queue ${config.taskQueue}; metrics ${running.worker.metricsUrl ?? 'disabled'}`);
  say(
    `Keeper sinks: ${config.sinksFile}   (a keeper names one: npm run cli -- keep --domain ${DOMAIN} --sink demo-config)`,
  );

  running.connection = await Connection.connect({ address: ADDRESS });
  // Encrypting like the worker when PAYLOAD_ENCRYPTION_KEYS_FILE is set (docs/security.md).
  const dataConverter = payloadEncryptionFromEnv(process.env)?.dataConverter;
  const client = new Client({ connection: running.connection, namespace: config.namespace, dataConverter });
  return { client, taskQueue: config.taskQueue, workerDone };
}

/** A sinks file with one file sink (`demo-config`, for the demo's domain) in a temporary directory, removed at shutdown. */
function demoSinksFile(running: Running): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docs-admin-demo-'));
  running.sinksDir = dir;
  const file = path.join(dir, 'sinks.yaml');
  const target = path.join(dir, 'deployment', 'staticExport.json');
  const sinks = { 'demo-config': { type: 'file', path: target, domains: [DOMAIN] } };
  writeFileSync(file, JSON.stringify({ allowedDirs: [dir], sinks }, null, 2));
  return file;
}

/** Starts one static export and one agent job side by side, their progress printed as it changes. */
async function startBoth(client: Client, taskQueue: string) {
  say('');
  say(`Static export of ${DOMAIN} and an agent job for ${PROJECT}, side by side:`);
  let lastExportLine = '';
  const exportDone = runExport(
    client,
    { domain: DOMAIN },
    {
      taskQueue,
      onProgress: (s) => {
        const line = `  export  ${s.phase.padEnd(9)} ${String(Math.round(s.progress)).padStart(3)}%  ${s.pageCount} pages  (${s.polls} polls)`;
        if (line !== lastExportLine) say((lastExportLine = line));
      },
    },
  );
  const agentStarted = await startAgentJob(client, { projectId: PROJECT, prompt: PROMPT }, { taskQueue });
  say(`  agent   job ${agentStarted.jobId} created (workflow ${agentStarted.workflowId})`);
  let lastAgentLine = '';
  const agentDone = awaitAgentJob(client, agentStarted.workflowId, {
    onProgress: (s) => {
      const line = `  agent   ${s.phase.padEnd(9)} ${s.status ?? ''}${s.prLink ? `  ${s.prLink}` : ''}  (${s.polls} polls)`;
      if (line !== lastAgentLine) say((lastAgentLine = line));
    },
  });
  return { both: Promise.all([exportDone, agentDone]) };
}

function printResults(...[exported, agent]: Awaited<Awaited<ReturnType<typeof startBoth>>['both']>): void {
  say('');
  say('Static export:');
  say(`  bundle link  ${exported.bundleUrl}`);
  say(`  expires at   ${exported.expiresAt}   (${exported.pageCount} pages, ${exported.sizeBytes} bytes)`);
  say(`  Web UI       ${workflowLink(exported.workflowId)}`);
  say('Agent job:');
  say(`  PR link      ${agent.prLink ?? '(no changes)'}`);
  say(`  status       ${agent.status}   (job ${agent.jobId})`);
  say(`  Web UI       ${workflowLink(agent.workflowId)}`);
  say('');
  say(JSON.stringify({ export: exported, agent }));
}

const running: Running = {};
const interrupted = new Promise<void>((resolve) => {
  process.once('SIGINT', () => resolve());
  process.once('SIGTERM', () => resolve());
});

main(running, interrupted)
  .then(async () => {
    await shutdown(running);
    say('Stopped.');
  })
  .catch(async (err: unknown) => {
    console.error(`npm start: ${err instanceof Error ? err.message : String(err)}`);
    await shutdown(running);
    process.exit(1);
  });
