// test-lane: cluster
// bundleKeeper in real time on the production-shaped cluster (default settings; a dev server when
// DOCS_ADMIN_SKIP_CLUSTER=1), as a deployment runs it: the product's worker (createDocsAdminWorker, as
// `npm run worker` builds it, with a sinks file), the keeper ensured through the client library with a
// named file sink, a publish from the project's CLI (`npm run cli -- publish`), the emulator's bundle links
// living a few seconds; then a keeper per named sink of the other types (webhook, command, mirror).
// The day-scale behaviour (a week of refreshes, coalesced publishes, pause, pin) is in keeper-timeskip.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { request } from 'undici';
import { ROOT } from '../../scripts/tools';
import { ensureKeeper } from '../../src/client';
import type { EmulatorHandle } from '../../emulator';
import { type KeeperStatus, keeperStatusQuery } from '../../src/shared/bundle-keeper';
import {
  type DocsAdminStack,
  createE2eEnv,
  startDocsAdminStack,
  terminateAll,
  uniqueTaskQueue,
  waitFor,
} from '../helpers/temporal';
import { appliedBundleUrl, writeSinksFile } from '../helpers/sinks';
import { type HookReceiver, startHookReceiver } from '../helpers/hook-receiver';

const run = promisify(execFile);
const KEY = 'mint_keeper_e2e_key_0123456789';
/** Bundle links live this long: the keeper refreshes them at half-life. */
const LINK_TTL_MS = 6_000;

async function download(url: string): Promise<{ status: number; gzip: boolean }> {
  const res = await request(url);
  const body = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, gzip: body[0] === 0x1f && body[1] === 0x8b };
}

describe('bundleKeeper in real time (first apply, verified link, publish, re-export)', () => {
  let env: TestWorkflowEnvironment;
  let stack: DocsAdminStack | undefined;
  let emu: EmulatorHandle;
  let dir: string;
  const keeperIds: string[] = [];
  let hooks: HookReceiver;
  const taskQueue = uniqueTaskQueue('keeper-e2e');
  const domain = `keeper-${Date.now().toString(36)}-${process.pid}.docs.example.com`;

  before(async () => {
    env = await createE2eEnv();
    dir = await fsp.mkdtemp(path.join(tmpdir(), 'keeper-e2e-'));
    hooks = await startHookReceiver();
    // The command sink's program: a node script (argv, no shell) writing its stdin where it is told.
    const script = `require('fs').writeFileSync(process.argv[1], require('fs').readFileSync(0))`;
    const sinksFile = await writeSinksFile(dir, {
      'e2e-file': { type: 'file', path: path.join(dir, 'docs.json'), domains: [domain] },
      'e2e-hook': {
        type: 'webhook',
        url: `${hooks.url}/deploy`,
        allowHttp: true,
        allowPrivateHosts: ['127.0.0.1'],
        domains: [`e2e-hook.${domain}`],
      },
      'e2e-command': {
        type: 'command',
        argv: [process.execPath, '-e', script, path.join(dir, 'command.json')],
        domains: [`e2e-command.${domain}`],
      },
      'e2e-mirror': {
        type: 'mirror',
        dir: path.join(dir, 'mirror'),
        urlPrefix: 'http://mirror.internal/docs',
        domains: [`e2e-mirror.${domain}`],
      },
    });
    stack = await startDocsAdminStack(
      env,
      { exportQueuedMs: 200, exportDurationMs: 1_500, bundleTtlMs: LINK_TTL_MS },
      { ADMIN_API_KEY: KEY, TEMPORAL_TASK_QUEUE: taskQueue, KEEPER_SINKS_FILE: sinksFile },
    );
    emu = stack.emu;
  });

  after(async () => {
    await terminateAll(env.client, keeperIds);
    await stack?.close();
    await hooks?.close();
    await env?.teardown();
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
  });

  test(
    'applies a verified link, keeps it fresh, and a publish re-exports and applies the new bundle',
    { timeout: 120_000 },
    async () => {
      const file = path.join(dir, 'docs.json');
      const handle = await ensureKeeper(
        env.client,
        { domain, sink: 'e2e-file', refreshMargin: { fraction: 0.5, minMs: 1_000 } },
        { taskQueue },
      );
      keeperIds.push(handle.workflowId);
      const status = (): Promise<KeeperStatus> => handle.query(keeperStatusQuery);

      // First apply: the keeper downloaded the link itself (verification) before writing it to the sink.
      const first = await waitFor(async () => ((await status()).jobId ? status() : null), {
        timeoutMs: 60_000,
        what: 'the first bundle applied',
      });
      assert.equal(first.exportsDone, 1);
      assert.ok(emu.counters().downloadsOk >= 1, 'the link was downloaded (verified) before it was applied');
      const doc = JSON.parse(await fsp.readFile(file, 'utf8')) as {
        staticExport: { enabled: boolean; bundleUrl: string };
      };
      assert.equal(doc.staticExport.enabled, true);
      assert.equal(doc.staticExport.bundleUrl, first.bundleUrl);
      assert.deepEqual(await download(doc.staticExport.bundleUrl), { status: 200, gzip: true });
      assert.equal(emu.counters().exportsStarted, 1);

      // Links live 6 s: a refresh replaces the link before it expires, without a new export.
      const refreshed = await waitFor(async () => ((await status()).refreshesDone >= 1 ? status() : null), {
        timeoutMs: 30_000,
        what: 'a refresh',
      });
      assert.equal(refreshed.exportsDone, 1, 'a refresh is not an export');
      assert.equal(refreshed.jobId, first.jobId);
      assert.notEqual(refreshed.bundleUrl, first.bundleUrl);

      // A publish from the CLI: a new export, verified and applied.
      const { stdout } = await run(
        process.execPath,
        ['--import', 'tsx', path.join(ROOT, 'src', 'starter.ts'), 'publish', '--domain', domain],
        {
          cwd: ROOT,
          env: {
            PATH: process.env.PATH ?? '',
            HOME: process.env.HOME ?? '',
            TEMPORAL_ADDRESS: env.address,
            TEMPORAL_NAMESPACE: env.namespace ?? 'default',
          },
          timeout: 60_000,
        },
      );
      assert.match(stdout, new RegExp(`publish signalled to ${handle.workflowId}`));
      // Applied once the status names the new export job (exportsDone counts the export when it finishes,
      // just before its link is verified and applied).
      const republished = await waitFor(
        async () => {
          const s = await status();
          return s.jobId !== first.jobId ? s : null;
        },
        { timeoutMs: 60_000, what: 'the re-export applied' },
      );
      assert.equal(republished.exportsDone, 2);
      assert.equal(emu.counters().exportsStarted, 2, 'exactly one re-export for one publish');
      const doc2 = JSON.parse(await fsp.readFile(file, 'utf8')) as { staticExport: { bundleUrl: string } };
      assert.equal(doc2.staticExport.bundleUrl, republished.bundleUrl);
      assert.deepEqual(await download(doc2.staticExport.bundleUrl), { status: 200, gzip: true });
      assert.equal(emu.counters().downloadsDenied, 0, 'no expired or unknown link was ever fetched');
    },
  );

  test(
    'a keeper per named sink of the other types keeps its deployment on a valid link',
    { timeout: 120_000 },
    async () => {
      const keepers = ['e2e-hook', 'e2e-command', 'e2e-mirror'].map(async (sink) => {
        const handle = await ensureKeeper(
          env.client,
          { domain: `${sink}.${domain}`, sink, refreshMargin: { fraction: 0.5, minMs: 1_000 } },
          { taskQueue },
        );
        keeperIds.push(handle.workflowId);
        // The mirror's stable URL does not expire: one apply; the others refresh before their link expires.
        const enough = (s: KeeperStatus) => s.jobId !== null && (sink === 'e2e-mirror' || s.refreshesDone >= 1);
        return waitFor(
          async () => {
            const s = await handle.query(keeperStatusQuery);
            return enough(s) ? s : null;
          },
          { timeoutMs: 60_000, what: `the ${sink} keeper applied (and refreshed)` },
        );
      });
      const [hook, command, mirror] = await Promise.all(keepers);
      const posted = hooks.received.at(-1)!;
      assert.equal(posted.staticExport.bundleUrl, hook!.bundleUrl);
      assert.deepEqual(await download(hook!.bundleUrl!), { status: 200, gzip: true });
      assert.equal(await appliedBundleUrl(path.join(dir, 'command.json')), command!.bundleUrl);
      assert.deepEqual(await download(command!.bundleUrl!), { status: 200, gzip: true });
      assert.match(mirror!.bundleUrl!, /^http:\/\/mirror\.internal\/docs\/.*\.tar\.gz$/);
      assert.equal(mirror!.expiresAt, null);
      const archive = path.join(dir, 'mirror', decodeURIComponent(mirror!.bundleUrl!.split('/').at(-1)!));
      assert.equal(((await fsp.stat(archive)).mode & 0o777).toString(8), '600');
      assert.equal(await appliedBundleUrl(path.join(dir, 'mirror', 'staticExport.json')), mirror!.bundleUrl);
    },
  );
});
