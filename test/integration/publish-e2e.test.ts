// test-lane: cluster
// Publishing end to end on the production-shaped cluster (a dev server when DOCS_ADMIN_SKIP_CLUSTER=1): a
// local GitHub signs real webhook payload examples and posts them to the receiver (src/webhooks), which
// signals the keeper of the repository and branch; the keeper has the emulator build the branch
// (deployment update), exports the commit it built and applies it through a file sink. Also: bad
// signature and body, unknown repository, redelivery, a burst of pushes, a failing build, and a worker
// process killed between the update and the export. The emulator answers as the platform documents its
// API (emulator/documented.ts): the merge test checks each answer it gave.
import assert from 'node:assert/strict';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import * as tar from 'tar';
import { ensureKeeper } from '../../src/client';
import { awaitAgentJob, startAgentJob } from '../../src/client/agent';
import { type KeeperStatus, keeperStatusQuery, publishSignal } from '../../src/shared/bundle-keeper';
import { repositoryKey } from '../../src/policies/validation/publish';
import { WebhookSecrets } from '../../src/webhooks/secrets';
import { type WebhookServer, startWebhookServer } from '../../src/webhooks/server';
import { keepersOf } from '../../src/webhooks/targets';
import { type EmulatorAnswer, type EmulatorHandle, startEmulator, undocumentedAnswer } from '../../emulator';
import { WorkerProcess } from '../chaos/helpers';
import { writeSinksFile } from '../helpers/sinks';
import {
  type DocsAdminStack,
  createE2eEnv,
  startDocsAdminStack,
  terminateAll,
  uniqueTaskQueue,
  waitFor,
} from '../helpers/temporal';
import { githubSender, mergedPayload, pushPayload, randomSha } from '../helpers/github';
import { startSignedReceiver, startSourcedKeeper } from '../helpers/publishing';

const KEY = 'mint_publish_e2e_key_0123456789';
const SECRET = 'webhook-secret-publish-e2e';
const run = `${Date.now().toString(36)}-${process.pid}`;

/** The commit a bundle renders (the emulator writes commit.txt into exports of published content). */
async function commitOf(url: string, dir: string): Promise<string | null> {
  const bytes = Buffer.from(await (await fetch(url)).arrayBuffer());
  const work = await fsp.mkdtemp(path.join(dir, 'bundle-'));
  await fsp.writeFile(path.join(work, 'b.tar.gz'), bytes);
  await tar.x({ file: path.join(work, 'b.tar.gz'), cwd: work });
  return fsp.readFile(path.join(work, 'commit.txt'), 'utf8').then(
    (t) => t.trim(),
    () => null,
  );
}

describe('publishing: merged pull request -> deployment update -> export -> sink', () => {
  let env: TestWorkflowEnvironment;
  let stack: DocsAdminStack | undefined;
  let receiver: WebhookServer | undefined;
  let dir: string;
  let send: Awaited<ReturnType<typeof githubSender>>;
  const keepers: string[] = [];
  const taskQueue = uniqueTaskQueue('publish-e2e');
  /** Every answer of the admin API double. */
  const answers: EmulatorAnswer[] = [];

  before(async () => {
    env = await createE2eEnv();
    dir = await fsp.mkdtemp(path.join(tmpdir(), 'publish-e2e-'));
    const sinks = Object.fromEntries(
      ['merge', 'burst', 'failing'].map((name) => [
        name,
        { type: 'file', path: path.join(dir, `${name}.json`), domains: [`pub-${name}-${run}.docs.example.com`] },
      ]),
    );
    stack = await startDocsAdminStack(
      env,
      {
        exportQueuedMs: 100,
        exportDurationMs: 1_000,
        updateQueuedMs: 100,
        updateBuildMs: 1_500,
        agentActiveMs: 300,
        onAnswer: (answer) => void answers.push(answer),
      },
      { ADMIN_API_KEY: KEY, TEMPORAL_TASK_QUEUE: taskQueue, KEEPER_SINKS_FILE: await writeSinksFile(dir, sinks) },
    );
    const secretFile = path.join(dir, 'secrets');
    // Two secrets, as during a rotation: the sender signs with the second.
    await fsp.writeFile(secretFile, `old-secret\n${SECRET}\n`, { mode: 0o600 });
    ({ receiver, send } = await startSignedReceiver(env.client, secretFile, SECRET));
  });

  after(async () => {
    await terminateAll(env.client, keepers);
    await receiver?.close();
    await stack?.close();
    await env?.teardown();
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
  });

  /** A keeper with a source and a file sink, its first (initial) bundle applied and its memo visible. */
  async function keeperFor(name: string) {
    const keeper = await startSourcedKeeper(env.client, stack!, { name, projectId: `pub-${name}-${run}`, taskQueue });
    keepers.push(keeper.handle.workflowId);
    const file = path.join(dir, `${name}.json`);
    const sinkUrl = async () =>
      (JSON.parse(await fsp.readFile(file, 'utf8')) as { staticExport: { bundleUrl: string } }).staticExport.bundleUrl;
    return { ...keeper, sinkUrl };
  }

  const updatesOf = (projectId: string) => stack!.emu.updates().filter((u) => u.projectId === projectId);
  const exportsOf = (domain: string) => stack!.emu.exports().filter((e) => e.domain === domain);

  test(
    'a merged agent pull request reaches the deployment, traced to its PR and agent job',
    { timeout: 120_000 },
    async () => {
      const from = answers.length;
      const k = await keeperFor('merge');
      const agent = await startAgentJob(
        env.client,
        { projectId: k.projectId, prompt: 'Document the new endpoint' },
        { taskQueue },
      );
      const result = await awaitAgentJob(env.client, agent.workflowId);
      assert.ok(result.prLink, 'the agent opened a pull request');
      // The agent job's DocsPrLink is what the receiver looks up.
      await waitFor(
        async () => {
          const list = env.client.workflow.list({ query: `DocsPrLink = '${result.prLink}'` });
          for await (const _ of list) return true;
          return false;
        },
        { timeoutMs: 30_000, what: 'DocsPrLink visible' },
      );
      const stale = await k.status();

      // The merge on GitHub: the branch head moves, then GitHub sends push and pull_request (closed, merged).
      const sha = randomSha();
      const filesChanged = { added: ['api/new-endpoint.mdx'], modified: ['docs.json'], removed: [] };
      const message = 'Merge pull request: document the new endpoint';
      stack!.emu.push({ projectId: k.projectId, sha, message, filesChanged });
      const pushed = await send({ event: 'push', payload: pushPayload(k.repositoryUrl, 'main', sha) });
      assert.equal(pushed.status, 202, pushed.text);
      assert.match(pushed.text, /publish signalled to bundle-keeper:/);
      const merged = await send({ event: 'pull_request', payload: mergedPayload(result.prLink, 'main', sha) });
      assert.equal(merged.status, 202, merged.text);

      const done = await k.applied(sha);
      assert.notEqual(done.jobId, stale.jobId);
      assert.equal(await k.sinkUrl(), done.bundleUrl, 'the sink holds the applied link');
      assert.equal(await commitOf(done.bundleUrl!, dir), sha, 'the applied bundle renders the merged commit');
      const commit = await waitFor(
        async () => (await k.status()).publishing?.commit?.pullRequest && (await k.status()).publishing!.commit,
        {
          what: 'the pull request recorded',
        },
      );
      assert.equal(commit.pullRequest!.url, result.prLink);
      assert.equal(commit.agentWorkflowId, agent.workflowId);
      assert.equal(updatesOf(k.projectId).length, 1, 'push and merge event: one update');
      assert.equal(exportsOf(k.domain).length, 2, 'the initial export and one for the merge');
      assert.equal(stack!.emu.counters().rateLimited, 0);
      // All the way with an API answering exactly as documented: the update status with filesChanged lists.
      const got = answers.slice(from);
      assert.deepEqual(
        got.map((a) => undocumentedAnswer(a.route, a.status, a.body)).filter((found) => found !== null),
        [],
      );
      type Update = { status?: string; commit?: { sha?: string } };
      const built = got
        .map((a) => (a.route === 'getUpdateStatus' ? (a.body as Update) : null))
        .find((u) => u?.status === 'success' && u.commit?.sha === sha);
      assert.deepEqual(built?.commit, { sha, ref: 'main', message, filesChanged });

      // A redelivery (same X-GitHub-Delivery) to the receiver, and the same delivery id signalled straight
      // to the keeper (as after a receiver restart): nothing happens.
      const again = await send({
        event: 'push',
        payload: pushPayload(k.repositoryUrl, 'main', randomSha()),
        id: pushed.id,
      });
      assert.equal(again.status, 202);
      assert.match(again.text, /redelivery/);
      await k.handle.signal(publishSignal, {
        repository: k.repositoryUrl,
        ref: 'main',
        deliveryId: pushed.id,
        sha: randomSha(),
      });
      const after = await k.status();
      assert.equal(after.publishing?.publishWanted, false);
      assert.equal(updatesOf(k.projectId).length, 1);
    },
  );

  test('bad signature 401, bad body 400, ping, other events and unknown repositories: nothing started', async () => {
    const before = stack!.emu.counters();
    const payload = pushPayload('https://github.com/nobody/nothing', 'main', randomSha());
    const forged = await send({ event: 'push', payload, secret: 'wrong-secret' });
    assert.equal(forged.status, 401);
    assert.equal(forged.text.split('\n').length, 1);
    const garbage = await send({ event: 'push', payload: '{not json' });
    assert.equal(garbage.status, 400);
    assert.match(garbage.text, /^bad body/);
    const noRepo = await send({ event: 'push', payload: { ref: 'refs/heads/main' } });
    assert.equal(noRepo.status, 400);
    const ping = await send({ event: 'ping', payload: { zen: 'Keep it logically awesome.' } });
    assert.deepEqual([ping.status, ping.text], [202, 'pong']);
    const issue = await send({ event: 'issues', payload: { action: 'opened' } });
    assert.match(issue.text, /^ignored/);
    const unknown = await send({ event: 'push', payload });
    assert.equal(unknown.status, 202);
    assert.match(unknown.text, /no keeper for github.com\/nobody\/nothing @ main/);
    const now = stack!.emu.counters();
    assert.equal(now.updatesTriggered, before.updatesTriggered);
    assert.equal(now.exportsStarted, before.exportsStarted);
  });

  test(
    'a burst of 50 pushes: at most two updates and two exports, no 429, the last commit applied',
    { timeout: 120_000 },
    async () => {
      const k = await keeperFor('burst');
      let last = '';
      const answers = [];
      for (let i = 0; i < 50; i++) {
        last = randomSha();
        stack!.emu.push({ projectId: k.projectId, sha: last, message: `push ${i}` });
        answers.push(send({ event: 'push', payload: pushPayload(k.repositoryUrl, 'main', last) }));
      }
      for (const a of await Promise.all(answers)) assert.equal(a.status, 202, a.text);
      await k.applied(last);
      assert.ok(updatesOf(k.projectId).length <= 2, `updates: ${updatesOf(k.projectId).length}`);
      assert.ok(exportsOf(k.domain).length - 1 <= 2, `exports: ${exportsOf(k.domain).length - 1}`);
      assert.equal(stack!.emu.counters().rateLimited, 0);
      assert.equal(await commitOf(await k.sinkUrl(), dir), last);
    },
  );

  test(
    'a failing build leaves the live link, says why, and a plain publish tries again',
    { timeout: 120_000 },
    async () => {
      const k = await keeperFor('failing');
      const live = await k.status();
      stack!.emu.configure({ failingUpdateProjects: [k.projectId] });
      const bad = randomSha();
      stack!.emu.push({ projectId: k.projectId, sha: bad });
      await send({ event: 'push', payload: pushPayload(k.repositoryUrl, 'main', bad) });
      const failed = await waitFor(
        async () => ((await k.status()).publishing?.update?.status === 'failure' ? k.status() : null),
        {
          timeoutMs: 30_000,
          what: 'the update failure reported',
        },
      );
      assert.match(failed.publishing!.update!.error!, /build failed/);
      assert.equal(failed.bundleUrl, live.bundleUrl, 'the live link stays');
      assert.equal(exportsOf(k.domain).length, 1, 'no export for a failed build');
      const meta = await k.handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
      assert.match(meta.currentDetails ?? '', /update error \| update .* ended failure/);

      // Fixed and pushed; then `docs-admin publish` (the signal without an argument) builds the branch head.
      stack!.emu.configure({ failingUpdateProjects: [] });
      const good = randomSha();
      stack!.emu.push({ projectId: k.projectId, sha: good });
      await k.handle.signal(publishSignal);
      const fixed = await k.applied(good);
      assert.equal(fixed.publishing?.update?.error, null);
      assert.equal(updatesOf(k.projectId).length, 2);
    },
  );
});

describe('publishing: a worker killed between the update and the export', () => {
  let env: TestWorkflowEnvironment;
  let emu: EmulatorHandle;
  let worker: WorkerProcess | undefined;
  let receiver: WebhookServer | undefined;
  let dir: string;
  let keeperId: string | undefined;
  let sinksFile: string;
  const taskQueue = uniqueTaskQueue('publish-kill');
  const workerEnv = (): Record<string, string> => ({
    TEMPORAL_ADDRESS: env.address,
    TEMPORAL_NAMESPACE: env.namespace ?? 'default',
    TEMPORAL_TASK_QUEUE: taskQueue,
    ADMIN_API_URL: emu.url,
    ADMIN_API_KEY: KEY,
    KEEPER_SINKS_FILE: sinksFile,
  });

  before(async () => {
    env = await createE2eEnv();
    emu = await startEmulator({
      exportQueuedMs: 100,
      exportDurationMs: 1_000,
      updateQueuedMs: 100,
      updateBuildMs: 4_000,
    });
    dir = await fsp.mkdtemp(path.join(tmpdir(), 'publish-kill-'));
    sinksFile = await writeSinksFile(dir, {
      docs: { type: 'file', path: path.join(dir, 'docs.json'), domains: [`pub-kill-${run}.docs.example.com`] },
    });
    worker = await WorkerProcess.start({ env: workerEnv() });
    await fsp.writeFile(path.join(dir, 'secrets'), `${SECRET}\n`, { mode: 0o600 });
    receiver = await startWebhookServer({
      host: '127.0.0.1',
      port: 0,
      client: env.client,
      secrets: new WebhookSecrets(path.join(dir, 'secrets')),
      log: () => undefined,
    });
  });

  after(async () => {
    await terminateAll(env.client, [keeperId]);
    await receiver?.close();
    await worker?.kill();
    await emu?.close();
    await env?.teardown();
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
  });

  test(
    'SIGKILL while the update builds: after a restart it is polled, exported and applied once',
    { timeout: 240_000 },
    async () => {
      const send = await githubSender(receiver!.url, SECRET);
      const projectId = `pub-kill-${run}`;
      const domain = `${projectId}.docs.example.com`;
      const repositoryUrl = `https://github.com/docs-emulator/${projectId}`;
      emu.push({ projectId, domain });
      const handle = await ensureKeeper(
        env.client,
        {
          domain,
          sink: 'docs',
          source: { projectId, repository: repositoryUrl, ref: 'main' },
        },
        { taskQueue },
      );
      keeperId = handle.workflowId;
      const status = (): Promise<KeeperStatus> => handle.query(keeperStatusQuery);
      await waitFor(async () => (await status()).jobId, { timeoutMs: 60_000, what: 'first bundle applied' });
      await waitFor(async () => (await keepersOf(env.client, repositoryKey(repositoryUrl)!, 'main')).length > 0, {
        timeoutMs: 30_000,
        what: 'the source memo visible',
      });

      const sha = randomSha();
      emu.push({ projectId, sha, message: 'Merge pull request #3' });
      assert.equal((await send({ event: 'push', payload: pushPayload(repositoryUrl, 'main', sha) })).status, 202);
      // The keeper has triggered the update and recorded it: kill the worker while it builds.
      await waitFor(async () => (await status()).publishing?.update?.status === 'queued', {
        what: 'the update recorded',
      });
      await worker!.kill('SIGKILL');
      // GitHub's pull_request event arrives while no worker runs: the signal waits in the history.
      const merged = await send({
        event: 'pull_request',
        payload: mergedPayload(`${repositoryUrl}/pull/3`, 'main', sha),
      });
      assert.equal(merged.status, 202, merged.text);
      await waitFor(() => emu.updates().some((u) => u.projectId === projectId && u.status === 'success'), {
        timeoutMs: 30_000,
        what: 'the build finished while the worker was down',
      });
      worker = await WorkerProcess.start({ env: workerEnv() });

      const done = await waitFor(async () => ((await status()).publishing?.commit?.sha === sha ? status() : null), {
        timeoutMs: 120_000,
        what: 'the commit applied after the restart',
      });
      assert.equal(await commitOf(done.bundleUrl!, dir), sha);
      assert.equal(
        done.publishing?.commit?.pullRequest?.number,
        3,
        'the signal sent while the worker was down counted',
      );
      assert.equal(emu.updates().filter((u) => u.projectId === projectId).length, 1, 'one update');
      assert.equal(emu.exports().filter((e) => e.domain === domain).length, 2, 'the initial export and one more');
    },
  );
});
