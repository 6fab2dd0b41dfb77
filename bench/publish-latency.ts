// Publish latency: from a merge (GitHub's push and pull_request deliveries, signed, posted to the webhook
// receiver) to the deployment pointing at a verified link of the new content, on the production-shaped
// cluster (127.0.0.1:7633) with the path users take: the worker and the receiver as their own processes,
// a keeper with a source and a file sink, the emulator's build and export taking 20 s and 30 s.
// Target: at most build + export + 10 s. The deployment "points at the new content" when its config
// file's link downloads and the archive names the merged commit (the emulator writes commit.txt).
//
//   const report = await runPublishLatency({ runs: 3 });
//
// Standalone: `npx tsx bench/publish-latency.ts [--runs N]` prints the report.
import { type ChildProcess, spawn } from 'node:child_process';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as tar from 'tar';
import { type EmulatorHandle, startEmulator } from '../emulator';
import { ROOT } from '../scripts/tools';
import { waitFor } from '../scripts/wait';
import { ensureKeeper } from '../src/client';
import { keeperStatusQuery } from '../src/shared/bundle-keeper';
import { freeLoopbackPort } from '../src/observability/free-port';
import { repositoryKey } from '../src/policies/validation/publish';
import { keepersOf } from '../src/webhooks/targets';
import { WorkerProcess } from '../test/chaos/helpers';
import { githubSender, mergedPayload, pushPayload, randomSha } from '../test/helpers/github';
import { createE2eEnv, uniqueTaskQueue } from '../test/helpers/temporal';
import { writeSinksFile } from '../test/helpers/sinks';

export interface PublishLatencyOptions {
  runs?: number;
  buildMs?: number;
  exportMs?: number;
}

export interface PublishLatencyReport {
  buildMs: number;
  exportMs: number;
  /** Merge to verified new link in the sink, per run. */
  latenciesMs: number[];
  targetMs: number;
  maxMs: number;
  pass: boolean;
}

const KEY = 'mint_bench_publish_latency_0123456789';
const SECRET = 'bench-publish-latency-secret';

/** The commit the archive at `url` renders, or null when it does not download or names none. */
async function commitAt(url: string, dir: string): Promise<string | null> {
  const res = await fetch(url).catch(() => null);
  if (!res?.ok) return null;
  const work = await fsp.mkdtemp(path.join(dir, 'bundle-'));
  try {
    await fsp.writeFile(path.join(work, 'b.tar.gz'), Buffer.from(await res.arrayBuffer()));
    await tar.x({ file: path.join(work, 'b.tar.gz'), cwd: work });
    return (await fsp.readFile(path.join(work, 'commit.txt'), 'utf8')).trim();
  } catch {
    return null;
  } finally {
    await fsp.rm(work, { recursive: true, force: true });
  }
}

/** `npm run webhooks` as its own process; resolves once it listens. */
async function startReceiver(env: Record<string, string>, port: number): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'src', 'webhooks.ts'), '--port', String(port)],
    {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`the webhook receiver exited: ${out.slice(-1000)}`);
      return out.includes('webhook receiver on');
    },
    { timeoutMs: 60_000, what: 'the webhook receiver' },
  );
  return child;
}

interface Target {
  projectId: string;
  repositoryUrl: string;
  /** The file sink's config file. */
  file: string;
  dir: string;
  timeoutMs: number;
}

/** `runs` merges one after another: each timed from its push delivery to its commit deployed. */
async function measure(
  runs: number,
  { projectId, repositoryUrl, file, dir, timeoutMs }: Target,
  emu: EmulatorHandle,
  send: Awaited<ReturnType<typeof githubSender>>,
): Promise<number[]> {
  const latenciesMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const sha = randomSha();
    emu.push({ projectId, sha, message: `Merge pull request #${i + 1}` });
    const started = performance.now();
    const pushed = await send({ event: 'push', payload: pushPayload(repositoryUrl, 'main', sha) });
    if (!/publish signalled/.test(pushed.text)) throw new Error(`push not delivered: ${pushed.text}`);
    await send({ event: 'pull_request', payload: mergedPayload(`${repositoryUrl}/pull/${i + 1}`, 'main', sha) });
    let seenUrl = '';
    await waitFor(
      async () => {
        const url = (JSON.parse(await fsp.readFile(file, 'utf8')) as { staticExport: { bundleUrl: string } })
          .staticExport.bundleUrl;
        if (url === seenUrl) return false;
        if ((await commitAt(url, dir)) !== sha) return false;
        seenUrl = url;
        return true;
      },
      { timeoutMs, intervalMs: 100, what: `run ${i + 1}: the new content deployed` },
    );
    latenciesMs.push(performance.now() - started);
    console.log(`publish latency run ${i + 1}: ${(latenciesMs[i]! / 1000).toFixed(1)} s`);
  }
  return latenciesMs;
}

export async function runPublishLatency(options: PublishLatencyOptions = {}): Promise<PublishLatencyReport> {
  const { runs = 3, buildMs = 20_000, exportMs = 30_000 } = options;
  // The cluster, or a dev server with E2E_SERVER=dev-server or DOCS_ADMIN_SKIP_CLUSTER=1 (as the e2e files).
  const env = await createE2eEnv();
  const emu = await startEmulator({
    updateQueuedMs: 0,
    updateBuildMs: buildMs,
    exportQueuedMs: 0,
    exportDurationMs: exportMs,
  });
  const dir = await fsp.mkdtemp(path.join(tmpdir(), 'bench-publish-'));
  const taskQueue = uniqueTaskQueue('bench-publish');
  const temporalEnv = { TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace ?? 'default' };
  let worker: WorkerProcess | undefined;
  let receiver: ChildProcess | undefined;
  let keeperId: string | undefined;
  const projectId = `bench-publish-${Date.now().toString(36)}`;
  const domain = `${projectId}.docs.example.com`;
  try {
    await fsp.writeFile(path.join(dir, 'secret'), `${SECRET}\n`, { mode: 0o600 });
    const port = await freeLoopbackPort();
    [worker, receiver] = await Promise.all([
      WorkerProcess.start({
        env: {
          ...temporalEnv,
          TEMPORAL_TASK_QUEUE: taskQueue,
          ADMIN_API_URL: emu.url,
          ADMIN_API_KEY: KEY,
          KEEPER_SINKS_FILE: await writeSinksFile(dir, {
            docs: { type: 'file', path: path.join(dir, 'docs.json'), domains: [domain] },
          }),
        },
      }),
      startReceiver({ ...temporalEnv, GITHUB_WEBHOOK_SECRET_FILE: path.join(dir, 'secret') }, port),
    ]);
    const send = await githubSender(`http://127.0.0.1:${port}`, SECRET);

    const repositoryUrl = `https://github.com/docs-emulator/${projectId}`;
    const file = path.join(dir, 'docs.json');
    emu.push({ projectId, domain });
    const handle = await ensureKeeper(
      env.client,
      { domain, sink: 'docs', source: { projectId, repository: repositoryUrl, ref: 'main' } },
      { taskQueue },
    );
    keeperId = handle.workflowId;
    await waitFor(async () => (await handle.query(keeperStatusQuery)).jobId, {
      timeoutMs: exportMs + 60_000,
      what: 'the first bundle applied',
    });
    // The receiver finds the keeper once its source memo is visible.
    await waitFor(async () => (await keepersOf(env.client, repositoryKey(repositoryUrl)!, 'main')).length > 0, {
      timeoutMs: 30_000,
      what: "the keeper's source memo visible",
    });

    const latenciesMs = await measure(
      runs,
      { projectId, repositoryUrl, file, dir, timeoutMs: buildMs + exportMs + 120_000 },
      emu,
      send,
    );
    const targetMs = buildMs + exportMs + 10_000;
    const maxMs = Math.max(...latenciesMs);
    return { buildMs, exportMs, latenciesMs, targetMs, maxMs, pass: maxMs <= targetMs };
  } finally {
    if (keeperId)
      await env.client.workflow
        .getHandle(keeperId)
        .terminate('benchmark finished')
        .catch(() => undefined);
    receiver?.kill('SIGTERM');
    await worker?.kill();
    await emu.close();
    await env.teardown();
    await fsp.rm(dir, { recursive: true, force: true });
  }
}

/** Runs the benchmark and writes publish.{json,md} into `out`. */
export async function writePublishLatencyReport(
  out: string,
): Promise<{ report: PublishLatencyReport; markdown: string }> {
  const report = await runPublishLatency();
  const markdown = renderPublishLatencyMarkdown(report);
  await fsp.writeFile(path.join(out, 'publish.json'), `${JSON.stringify(report, null, 2)}\n`);
  await fsp.writeFile(path.join(out, 'publish.md'), markdown);
  return { report, markdown };
}

export function renderPublishLatencyMarkdown(r: PublishLatencyReport): string {
  const s = (ms: number) => (ms / 1000).toFixed(1);
  return [
    '# Publish latency',
    '',
    '`bench/publish-latency.ts`: from a merge (signed push and pull_request deliveries posted to `npm run webhooks`) to',
    "the deployment's config file pointing at a link that downloads the merged commit's content, on the cluster, with a",
    `worker process of its own; the emulator builds in ${s(r.buildMs)} s and exports in ${s(r.exportMs)} s.`,
    '',
    '| runs | latencies (s) | max (s) | target (s) | |',
    '|---:|---|---:|---:|---|',
    `| ${r.latenciesMs.length} | ${r.latenciesMs.map(s).join(', ')} | ${s(r.maxMs)} | ${s(r.targetMs)} | ${r.pass ? 'met' : 'MISSED'} |`,
    '',
  ].join('\n');
}

if (require.main === module) {
  const i = process.argv.indexOf('--runs');
  runPublishLatency({ runs: i >= 0 ? Number(process.argv[i + 1]) : 3 }).then(
    (report) => {
      console.log(renderPublishLatencyMarkdown(report));
      process.exit(report.pass ? 0 : 1);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
