// test-lane: cluster
// Payload encryption on the production-shaped cluster, end to end. With the cluster's key file, an
// agent job (its prompt carries a marker) and an export run by the real worker, started by the CLI
// as a process, and an export schedule: neither the marker nor the bundle link's signature is in
// `temporal workflow show` of the job, its rate limiter (plain by design) and the export, in `temporal schedule
// describe`, or in PostgreSQL's history and execution tables; `docs-admin status --json` and the
// cluster's codec server show both decoded. Then a key rotation while jobs are in flight: a new line
// on top of the key file, no restart, every job completes.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@temporalio/client';
import { startEmulator, type EmulatorHandle } from '../../emulator';
import { CLUSTER_CODEC_URL } from '../../scripts/cluster/layout';
import { psql } from '../../scripts/cluster/postgres';
import { findTemporalCli } from '../../scripts/tools';
import { startAgentJob } from '../../src/client';
import { keyIdsIn } from '../../src/client/key-usage';
import { generateKeyLine, payloadEncryption } from '../../src/codec';
import { rateLimiterWorkflowId } from '../../src/shared/rate-limiter';
import type { DocsAdminWorker } from '../../src/worker';
import {
  type ClusterEnv,
  clusterSkipReason,
  createClusterEnv,
  startDocsAdminWorker,
  uniqueTaskQueue,
} from '../helpers/temporal';

const ROOT = path.resolve(__dirname, '../..');
const KEY = 'mint_encryption_test_key_0123456789';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const run = (command: string, args: string[], env: NodeJS.ProcessEnv): Promise<Run> =>
  new Promise((resolve) =>
    execFile(command, args, { cwd: ROOT, env, timeout: 120_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    ),
  );

/** Rows of the cluster's PostgreSQL whose bytes contain `needle`. */
function rowsContaining(database: string, table: string, columns: string[], needle: string): number {
  const where = columns.map((c) => `position(convert_to('${needle}', 'UTF8') in coalesce(${c}, ''::bytea)) > 0`);
  return Number(psql(database, `SELECT count(*) FROM ${table} WHERE ${where.join(' OR ')}`)[0]?.[0]);
}

/** Every payload of a `temporal ... -o json` document: objects with metadata and data. */
function payloadsIn(value: unknown, found: { metadata: Record<string, string>; data?: string }[] = []) {
  if (Array.isArray(value)) for (const v of value) payloadsIn(v, found);
  else if (value && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    if (record.metadata && typeof record.metadata === 'object' && 'encoding' in (record.metadata as object))
      found.push(record as { metadata: Record<string, string>; data?: string });
    else for (const v of Object.values(record)) payloadsIn(v, found);
  }
  return found;
}

describe('payload encryption on the cluster', { skip: clusterSkipReason() }, () => {
  let env: ClusterEnv;
  let emu: EmulatorHandle;
  let worker: DocsAdminWorker;
  let keysFile: string;
  let cliEnv: NodeJS.ProcessEnv;
  const temporalCli = findTemporalCli() as string;
  const taskQueue = uniqueTaskQueue('encryption');
  const limiterTaskQueue = uniqueTaskQueue('encryption-limiter');
  const marker = `marker-${randomUUID()}`;
  const projectId = `enc-${process.pid}-${Date.now()}`;
  const domain = `enc-${process.pid}-${Date.now()}.docs.example.com`;

  before(async () => {
    env = await createClusterEnv();
    keysFile = env.ensured.payloadKeysFile;
    emu = await startEmulator({ agentActiveMs: 300, exportQueuedMs: 100, exportDurationMs: 600 });
    worker = await startDocsAdminWorker(
      env,
      {
        ADMIN_API_URL: emu.url,
        ADMIN_API_KEY: KEY,
        TEMPORAL_TASK_QUEUE: taskQueue,
        PAYLOAD_ENCRYPTION_KEYS_FILE: keysFile,
      },
      { limiterTaskQueue },
    );
    cliEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_TASK_QUEUE: taskQueue,
      PAYLOAD_ENCRYPTION_KEYS_FILE: keysFile,
    };
  });

  after(async () => {
    await worker?.close();
    await emu?.close();
    await env?.teardown();
  });

  test('nothing secret at rest; status and the codec server show it decoded', async () => {
    const docsAdmin = (args: string[]) => run(process.execPath, ['--import', 'tsx', 'src/starter.ts', ...args], cliEnv);
    const [agent, exported] = await Promise.all([
      docsAdmin(['agent', '--project', projectId, '--prompt', `Document the ${marker} page`, '--wait', '--json']),
      docsAdmin(['export', '--domain', domain, '--wait', '--json']),
    ]);
    assert.equal(agent.code, 0, agent.stderr);
    assert.equal(exported.code, 0, exported.stderr);
    const job = JSON.parse(agent.stdout.trim().split('\n').at(-1) as string) as { workflowId: string; prLink: string };
    const exp = JSON.parse(exported.stdout.trim().split('\n').at(-1) as string) as {
      workflowId: string;
      bundleUrl: string;
    };
    // The emulator signs its links with `sig` (S3's presigned links use X-Amz-Signature).
    const signature = new URL(exp.bundleUrl).searchParams.get('sig');
    assert.ok(signature && signature.length >= 16, `the bundle link is presigned: ${exp.bundleUrl}`);
    const scheduleId = `enc-${randomUUID()}`;
    const scheduled = await docsAdmin([
      'schedule',
      'create',
      '--id',
      scheduleId,
      '--domain',
      domain,
      '--every',
      '1d',
      '--paused',
      '--path',
      `/${marker}`,
      '--json',
    ]);
    assert.equal(scheduled.code, 0, scheduled.stderr);

    const secrets = [marker, signature];
    const shown: string[] = [];
    for (const workflowId of [job.workflowId, rateLimiterWorkflowId(projectId), exp.workflowId]) {
      const show = await run(
        temporalCli,
        ['workflow', 'show', '--address', env.address, '-w', workflowId, '-o', 'json'],
        cliEnv,
      );
      assert.equal(show.code, 0, show.stderr);
      shown.push(show.stdout);
      for (const secret of secrets)
        assert.ok(!show.stdout.includes(secret), `${workflowId}'s history has no ${secret}`);
      // The limiter's payloads are public (project ids, request keys, times) and plain whatever the key.
      const limiter = workflowId === rateLimiterWorkflowId(projectId);
      assert.equal(
        show.stdout.includes(Buffer.from('binary/encrypted').toString('base64')),
        !limiter,
        `${workflowId} ${limiter ? 'holds no' : 'holds'} encrypted payloads`,
      );
    }
    const describeSchedule = await run(
      temporalCli,
      ['schedule', 'describe', '--address', env.address, '-s', scheduleId, '-o', 'json'],
      cliEnv,
    );
    assert.equal(describeSchedule.code, 0, describeSchedule.stderr);
    assert.ok(!describeSchedule.stdout.includes(marker), 'the schedule action has no marker');
    assert.ok(describeSchedule.stdout.includes(Buffer.from('binary/encrypted').toString('base64')));

    // PostgreSQL: the histories, the mutable state, visibility's memo. The project id (a search
    // attribute, plain by design) shows the search finds what is there.
    assert.ok(
      rowsContaining('temporal', 'history_node', ['data'], projectId) > 0,
      'the search finds plain search attributes',
    );
    for (const secret of secrets) {
      assert.equal(rowsContaining('temporal', 'history_node', ['data'], secret), 0, `no ${secret} in history_node`);
      assert.equal(
        rowsContaining('temporal', 'executions', ['data', 'state'], secret),
        0,
        `no ${secret} in executions`,
      );
      assert.equal(
        rowsContaining('temporal_visibility', 'executions_visibility', ['memo'], secret),
        0,
        `no ${secret} in visibility`,
      );
    }

    // Decoded for people: docs-admin status, the schedule's view, the codec server.
    const status = await docsAdmin(['status', job.workflowId, '--json']);
    assert.equal(status.code, 0, status.stderr);
    assert.ok(status.stdout.includes(marker), 'status shows the summary with the prompt');
    const exportStatus = await docsAdmin(['status', exp.workflowId, '--json']);
    assert.ok(exportStatus.stdout.includes(signature), 'status shows the bundle link');
    const view = JSON.parse((await docsAdmin(['schedule', 'describe', scheduleId, '--json'])).stdout.trim()) as {
      domain: string;
    };
    assert.equal(view.domain, domain, 'the schedule memo decodes');
    await docsAdmin(['schedule', 'delete', scheduleId]);

    const payloads = shown.flatMap((doc) => payloadsIn(JSON.parse(doc)));
    const decode = (headers: Record<string, string>) =>
      fetch(`${CLUSTER_CODEC_URL}/decode`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Origin: env.ensured.uiUrl, ...headers },
        body: JSON.stringify({ payloads }),
      });
    assert.equal((await decode({})).status, 401, 'the codec server asks who is calling');
    const token = readFileSync(env.ensured.codecTokenFile, 'utf8').split('\n')[0] as string;
    const res = await decode({ Authorization: `Bearer ${token}` });
    assert.equal(res.status, 200);
    const decoded = JSON.stringify(
      ((await res.json()) as { payloads: { data: string }[] }).payloads.map((p) =>
        Buffer.from(p.data, 'base64').toString(),
      ),
    );
    for (const secret of secrets) assert.ok(decoded.includes(secret), `the codec server decodes ${secret}`);
    // As `npm run cluster` prints it: the temporal CLI decodes through the codec server with the token.
    const showDecoded = await run(
      temporalCli,
      [
        'workflow',
        'show',
        '--address',
        env.address,
        '-w',
        job.workflowId,
        '--codec-endpoint',
        CLUSTER_CODEC_URL,
        '--codec-auth',
        `Bearer ${token}`,
      ],
      cliEnv,
    );
    assert.equal(showDecoded.code, 0, showDecoded.stderr);
    assert.match(showDecoded.stdout, /ResultEncoding\s+json\/plain/, 'temporal workflow show --codec-auth decodes');
    assert.ok(showDecoded.stdout.includes(job.prLink), 'and shows the result: the PR link');
  });

  test('a key rotation while jobs are in flight: no restart, every job completes', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rotation-'));
    const file = path.join(dir, 'keys');
    const [oldLine, newLine] = [generateKeyLine(), generateKeyLine()];
    writeFileSync(file, `${oldLine}\n`);
    const rotationQueue = uniqueTaskQueue('rotation');
    const slowEmu = await startEmulator({ agentActiveMs: 4_000 });
    const rotating = await startDocsAdminWorker(
      env,
      {
        ADMIN_API_URL: slowEmu.url,
        ADMIN_API_KEY: KEY,
        TEMPORAL_TASK_QUEUE: rotationQueue,
        PAYLOAD_ENCRYPTION_KEYS_FILE: file,
      },
      { limiterTaskQueue: uniqueTaskQueue('rotation-limiter') },
    );
    try {
      const client = new Client({
        connection: env.connection,
        namespace: env.namespace,
        dataConverter: payloadEncryption(file).dataConverter,
      });
      const project = `rotation-${process.pid}-${Date.now()}`;
      const jobs = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          startAgentJob(client, { projectId: project, prompt: `rotation ${i}` }, { taskQueue: rotationQueue }),
        ),
      );
      // In flight: each job has its id from the API and polls; now the new key goes on top.
      writeFileSync(file, `${newLine}\n${oldLine}\n`);
      const results = await Promise.all(jobs.map((j) => j.handle.result()));
      assert.deepEqual(
        results.map((r) => r.status),
        results.map(() => 'completed'),
      );
      const keyIds = new Set<string>();
      for (const j of jobs) keyIdsIn(await j.handle.fetchHistory(), keyIds);
      assert.deepEqual(
        [...keyIds].sort(),
        [oldLine.split(' ')[0], newLine.split(' ')[0]].sort(),
        'payloads under both keys',
      );
    } finally {
      await rotating.close();
      await slowEmu.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
