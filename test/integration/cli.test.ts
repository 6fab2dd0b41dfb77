// test-lane: parallel
// The real CLI as a child process (`node --import tsx src/starter.ts ...`) against a dev server, an
// in-process docs-admin worker and the admin API emulator: every command, the JSON contract, one-line
// errors with nothing started, and the schedule lifecycle.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkerConfig } from '../../src/config';
import { type EmulatorHandle, startEmulator } from '../../emulator';
import { keeperWorkflowId } from '../../src/shared/bundle-keeper';
import { rateLimiterWorkflowId } from '../../src/shared/rate-limiter';
import { runCli } from '../../src/starter';
import { createDocsAdminWorker, type DocsAdminWorker } from '../../src/worker';
import { createDevEnv, uniqueTaskQueue, waitFor, workflowBundle } from '../helpers/temporal';

const ROOT = path.resolve(__dirname, '../..');
const KEY = 'mint_cli_test_key_0123456789';
const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;
const domain = (what: string) => `${what}-${run}.example.com`;

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

describe('docs-admin CLI', () => {
  let env: TestWorkflowEnvironment;
  let emu: EmulatorHandle;
  let worker: DocsAdminWorker;
  let taskQueue: string;
  let childEnv: NodeJS.ProcessEnv;

  const cli = (args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<CliResult> =>
    new Promise((resolve) => {
      const started = Date.now();
      execFile(
        process.execPath,
        ['--import', 'tsx', 'src/starter.ts', ...args],
        { cwd: ROOT, env: { ...childEnv, ...extraEnv }, timeout: 45_000 },
        (err, stdout, stderr) => {
          const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
          resolve({ code, stdout, stderr, ms: Date.now() - started });
        },
      );
    });

  /**
   * The same CLI in-process (runCli, what src/starter.ts runs), for the many cases where spawning a
   * process per case costs seconds but proves nothing more. `connects` counts connection attempts.
   */
  let connects = 0;
  const cliInProcess = async (args: string[]): Promise<CliResult> => {
    const started = Date.now();
    let stdout = '';
    let stderr = '';
    const io = {
      stdout: { write: (chunk: string) => ((stdout += chunk), true) },
      stderr: { write: (chunk: string) => ((stderr += chunk), true), isTTY: false },
      env: childEnv,
    };
    const code = await runCli(args, io, async () => {
      connects++;
      return env.client;
    });
    return { code, stdout, stderr, ms: Date.now() - started };
  };

  const lastJson = (stdout: string): Record<string, unknown> => {
    const lines = stdout.trim().split('\n');
    return JSON.parse(lines[lines.length - 1] as string) as Record<string, unknown>;
  };

  /** A failure: non-zero exit, exactly one non-empty stderr line. */
  const assertOneLineError = (result: CliResult, pattern: RegExp) => {
    assert.notEqual(result.code, 0, `expected a non-zero exit, stdout: ${result.stdout}`);
    const lines = result.stderr.split('\n').filter((l) => l.trim() !== '');
    assert.equal(lines.length, 1, `expected one stderr line, got:\n${result.stderr}`);
    assert.match(lines[0] as string, pattern);
  };

  const totalApiCalls = () =>
    Object.values(emu.counters().calls).reduce(
      (sum, byStatus) => sum + Object.values(byStatus).reduce((a, b) => a + b, 0),
      0,
    );
  const workflowsOnQueue = async () => (await env.client.workflow.count(`TaskQueue = "${taskQueue}"`)).count;

  before(async () => {
    env = await createDevEnv();
    emu = await startEmulator({
      agentActiveMs: 300,
      exportQueuedMs: 100,
      exportDurationMs: 2_500,
      exportTotalPages: 37,
    });
    taskQueue = uniqueTaskQueue('cli');
    const config: WorkerConfig = {
      address: env.address,
      namespace: env.namespace ?? 'default',
      taskQueue,
      adminApiUrl: emu.url,
      adminApiKey: KEY,
      // A window far longer than the file: the agent test's two creates are both still in it when it
      // asks the limiter, however busy the machine (a 10 s window let the first one age out under load).
      agentRateLimit: { limit: 100, windowMs: 10 * 60_000 },
      metricsPort: 0,
    };
    worker = await createDocsAdminWorker(config, {
      connection: env.nativeConnection,
      client: env.client,
      workflowBundle: await workflowBundle(),
    });
    void worker.run();
    childEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_NAMESPACE: env.namespace ?? 'default',
      TEMPORAL_TASK_QUEUE: taskQueue,
    };
  });

  after(async () => {
    await worker?.close();
    await emu?.close();
    await env?.teardown();
  });

  test('bad input: one line on stderr, exit 2, nothing connected or started', async () => {
    const callsBefore = totalApiCalls();
    // Two as real processes, the rest in-process (same code; there the connection attempts are countable).
    const spawned = await Promise.all([
      cli(['export', '--domain', 'https://docs.example.com/path']),
      cli(['agent', '--project', `p-${run}`, '--prompt', '   ']),
    ]);
    assertOneLineError(spawned[0]!, /^error: invalid input: domain must be a bare hostname/);
    assertOneLineError(spawned[1]!, /^error: invalid input: prompt must contain/);
    const cases: [string[], RegExp][] = [
      [['export', '--domain', 'docs.example.com', '--path', ''], /paths\[0\] must be a non-empty string/],
      [['export', '--domain', 'docs.example.com:8080'], /without a port/],
      [['agent', '--project', 'bad project/id', '--prompt', 'fix typos'], /projectId may contain only/],
      [['agent', '--project', 'p', '--prompt', 'x', '--request-id', 'a b'], /requestId may contain only/],
      [['keep', '--domain', domain('keep-bad')], /give --sink <name>: a sink of the worker's sinks file/],
      [['keep', '--domain', domain('keep-bad'), '--sink', 'rm -rf /'], /sink must be a sink name/],
      [['keep', '--domain', domain('keep-bad'), '--kind', 'moon', '--sink', 'prod'], /argument 'moon' is invalid/],
      [['publish', '--domain', 'not a domain'], /domain must not contain whitespace|not a valid hostname/],
      [['schedule', 'create', '--domain', domain('sched-bad')], /give --cron EXPR and\/or --every DURATION/],
      [['schedule', 'create', '--domain', domain('sched-bad'), '--every', 'soon'], /every: expected a duration/],
      [
        ['schedule', 'create', '--domain', domain('sched-bad'), '--cron', '0 3 * *'],
        /cron "0 3 \* \*" must have 5 fields/,
      ],
      [
        ['schedule', 'create', '--domain', domain('sched-bad'), '--cron', '0 3 * * *', '--timezone', 'Mars/Olympus'],
        /timezone "Mars\/Olympus"/,
      ],
      [
        ['schedule', 'create', '--domain', domain('sched-bad'), '--every', '1h', '--overlap', 'sometimes'],
        /argument 'sometimes' is invalid/,
      ],
      [['schedule', 'backfill', 'x', '--start', 'yesterday', '--end', 'today'], /--start and --end must be ISO-8601/],
      [['schedule', 'describe'], /give a schedule id/],
      [['export'], /required option '--domain <domain>'/],
      [['status'], /missing required argument 'workflowId'/],
      [['resolve', 'agent-job:p:r'], /required option '--job-id <id>'/],
      [['resolve', 'agent-job:p:r', '--job-id', 'a b'], /jobId may contain only/],
      [['resend', ' '], /workflow id must not be empty/],
      [['abandon'], /missing required argument 'workflowId'/],
      [['frobnicate'], /unknown command 'frobnicate'/],
    ];
    for (const [args, pattern] of cases) {
      const result = await cliInProcess(args);
      assertOneLineError(result, pattern);
      assert.equal(result.code, 2, `${args.join(' ')} exits 2`);
    }
    for (const r of spawned) assert.equal(r.code, 2, 'bad input exits 2');
    assert.equal(connects, 0, 'no command connected to Temporal');
    assert.equal(totalApiCalls(), callsBefore, 'the emulator saw no call');
    assert.equal(await workflowsOnQueue(), 0, 'Temporal started no workflow');
    assert.equal(
      (await env.client.schedule.list()[Symbol.asyncIterator]().next()).done,
      true,
      'no schedule was created',
    );
  });

  test('unreachable Temporal server: one line, quickly', async () => {
    const result = await cli(['export', '--domain', domain('unreachable')], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    assertOneLineError(result, /^error: cannot reach the Temporal server at 127\.0\.0\.1:1 \(connection refused\)/);
    assert.ok(result.ms < 10_000, `took ${result.ms} ms`);
  });

  test('keygen prints a key line; a bad key file is one line naming the file and line, before connecting', async () => {
    const keygen = await cli(['keygen']);
    assert.equal(keygen.code, 0, keygen.stderr);
    assert.match(keygen.stdout, /^k\d{8}-[0-9a-f]{8} [A-Za-z0-9+/]{43}=\n$/);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cli-keys-'));
    try {
      const file = path.join(dir, 'keys');
      writeFileSync(file, `${keygen.stdout}k2 c2hvcnQ=\n`);
      const result = await cli(['status', 'any'], {
        PAYLOAD_ENCRYPTION_KEYS_FILE: file,
        TEMPORAL_ADDRESS: '127.0.0.1:1',
      });
      assertOneLineError(result, new RegExp(`^error: ${file} line 2: the key of "k2" is 5 bytes, expected 32$`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('status of an unknown workflow id: one line, non-zero', async () => {
    const result = await cli(['status', `no-such-workflow-${run}`]);
    assertOneLineError(result, /^error: no workflow with id "no-such-workflow-.*" in namespace/);
    assert.equal(result.code, 1);
  });

  test('--help on every command', async () => {
    const commands = [
      [],
      ['export'],
      ['agent'],
      ['keep'],
      ['publish'],
      ['status'],
      ['schedule'],
      ...['create', 'list', 'describe', 'pause', 'unpause', 'trigger', 'delete', 'update', 'backfill'].map((c) => [
        'schedule',
        c,
      ]),
      ['resolve'],
      ['resend'],
      ['abandon'],
    ];
    const results = await Promise.all(commands.map((c) => cliInProcess([...c, '--help'])));
    results.forEach((r, i) => {
      const name = commands[i]!.join(' ') || 'docs-admin';
      assert.equal(r.code, 0, `${name} --help exits 0`);
      assert.match(r.stdout, new RegExp(`^Usage: docs-admin ${commands[i]!.join(' ')}`), `${name} --help prints usage`);
    });
    assert.match(
      results[1]!.stdout,
      /--domain <domain>[\s\S]*--version <version>[\s\S]*--path <path>[\s\S]*--wait[\s\S]*--json/,
    );
    assert.match(results[2]!.stdout, /--project <projectId>[\s\S]*--prompt <text>[\s\S]*--request-id <id>/);
    assert.match(results[3]!.stdout, /--sink <name>[\s\S]*--version <version>[\s\S]*--kind/);
    for (const flag of [
      '--cron <expr>',
      '--every <duration>',
      '--timezone <tz>',
      '--jitter <duration>',
      '--overlap <policy>',
      '--id <scheduleId>',
    ]) {
      assert.ok(results[7]!.stdout.includes(flag), `schedule create --help shows ${flag}`);
    }
    assert.match(
      results[7]!.stdout,
      /"skip",\s+"buffer-one",\s+"buffer-all",\s+"cancel-other",\s+"terminate-other",\s+"allow-all",\s+default: "skip"/,
    );
    // And once as a real process.
    const spawned = await cli(['schedule', 'create', '--help']);
    assert.equal(spawned.code, 0);
    assert.equal(spawned.stdout, results[7]!.stdout);
    assert.equal(connects, 0);
  });

  test('export --wait --json: progress on stderr, the result as the last stdout line', async () => {
    const d = domain('export');
    const result = await cli(['export', '--domain', d, '--version', 'v2', '--wait', '--json']);
    assert.equal(result.code, 0, result.stderr);
    const out = lastJson(result.stdout);
    assert.deepEqual(Object.keys(out).sort(), [
      'bundleUrl',
      'domain',
      'expiresAt',
      'jobId',
      'pageCount',
      'sizeBytes',
      'workflowId',
    ]);
    assert.equal(out.domain, d);
    assert.equal(out.pageCount, 37);
    assert.match(String(out.workflowId), new RegExp(`^static-export:${d.replace(/\./g, '\\.')}:`));
    assert.ok(String(out.bundleUrl).startsWith(emu.url), 'the link is the emulator’s');
    assert.ok(Date.parse(String(out.expiresAt)) > Date.now());
    // The bundle behind the link is what the result says.
    const download = await fetch(String(out.bundleUrl));
    assert.equal(download.status, 200);
    assert.equal((await download.arrayBuffer()).byteLength, out.sizeBytes);
    // stderr is not a TTY here: plain progress lines, no bar redraws.
    assert.match(result.stderr, /^started static-export:/m);
    assert.match(result.stderr, /export .*: (starting|exporting|bundling|done) \d+% \(\d+ pages\)/);
    assert.ok(
      !result.stderr.includes('\r') && !result.stderr.includes(String.fromCharCode(27)),
      'no carriage returns or escape codes',
    );

    // status of the finished workflow: summary, search attribute, result.
    const status = await cli(['status', String(out.workflowId), '--json']);
    assert.equal(status.code, 0, status.stderr);
    const report = lastJson(status.stdout);
    assert.equal(report.status, 'COMPLETED');
    assert.equal(report.type, 'staticExport');
    assert.equal(report.summary, `Export ${d} (version v2)`);
    assert.deepEqual((report.searchAttributes as Record<string, string>).DocsDomain, d);
    assert.equal((report.result as { jobId: string }).jobId, out.jobId);
  });

  test('export without --wait prints the workflow id; --request-id dedups', async () => {
    const d = domain('export-nowait');
    const first = await cli(['export', '--domain', d, '--path', '/a', '--path', '/b', '--request-id', 'r1']);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stdout.trim(), `static-export:${d}:r1`);
    const again = await cli(['export', '--domain', d, '--path', '/a', '--path', '/b', '--request-id', 'r1', '--json']);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(lastJson(again.stdout), { workflowId: `static-export:${d}:r1` });
    const result = await env.client.workflow.getHandle(`static-export:${d}:r1`).result();
    assert.equal((result as { pageCount: number }).pageCount, 2, 'one page per path');
    assert.equal(
      await env.client.workflow.count(`WorkflowId = "static-export:${d}:r1"`).then((c) => c.count),
      1,
      'one workflow',
    );
  });

  test('a failed export: non-zero exit, one line with the failure type', async () => {
    const result = await cli(['export', '--domain', `fail-${run}.example.com`, '--wait', '--json']);
    assert.equal(result.code, 1);
    // With --wait, stderr also carried progress; the reason is one line, the last one.
    const lines = result.stderr.trim().split('\n');
    assert.equal(lines.filter((l) => l.startsWith('error:')).length, 1);
    assert.match(lines[lines.length - 1] as string, /^error: workflow failed: ExportFailed: /);
    assert.equal(result.stdout, '', 'no result on stdout');
  });

  test('agent --wait --json: the job, status and PR link; without --wait: workflow id and job id', async () => {
    const project = `cli-${run}`;
    const result = await cli([
      'agent',
      '--project',
      project,
      '--prompt',
      'Fix the typo in the quickstart',
      '--request-id',
      'req-1',
      '--wait',
      '--json',
    ]);
    assert.equal(result.code, 0, result.stderr);
    const out = lastJson(result.stdout);
    assert.deepEqual(Object.keys(out).sort(), ['jobId', 'prLink', 'status', 'workflowId']);
    assert.equal(out.workflowId, `agent-job:${project}:req-1`);
    assert.equal(out.status, 'completed');
    const job = emu.jobs().find((j) => j.id === out.jobId);
    assert.ok(job, 'the emulator has the job');
    assert.equal(job.projectId, project);
    assert.equal(job.prompt, 'Fix the typo in the quickstart');
    assert.equal(out.prLink, job.prLink);
    assert.match(result.stderr, /agent job .*elapsed/);

    // Same request id: the same job, no second create (no second PR).
    const again = await cli([
      'agent',
      '--project',
      project,
      '--prompt',
      'Fix the typo in the quickstart',
      '--request-id',
      'req-1',
      '--json',
    ]);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(lastJson(again.stdout), { workflowId: out.workflowId, jobId: out.jobId });
    assert.equal(emu.jobs().filter((j) => j.projectId === project).length, 1);

    const noWait = await cli(['agent', '--project', project, '--prompt', '[no-change] tidy']);
    assert.equal(noWait.code, 0, noWait.stderr);
    const [workflowId, jobId] = noWait.stdout.trim().split('\n');
    assert.match(workflowId!, new RegExp(`^agent-job:${project}:`));
    assert.ok(
      emu.jobs().some((j) => j.id === jobId && j.projectId === project),
      'the printed job id exists in the emulator',
    );

    // The project's rate limiter answers `status`: both creates hold a slot of its window, nothing queued.
    const limiter = await cliInProcess(['status', rateLimiterWorkflowId(project), '--json']);
    assert.equal(limiter.code, 0, limiter.stderr);
    const report = lastJson(limiter.stdout);
    assert.equal(report.type, 'agentRateLimiter');
    assert.equal(report.status, 'RUNNING');
    assert.deepEqual(report.details, {
      ...(report.details as object),
      projectId: project,
      limit: 100,
      windowMs: 10 * 60_000,
      queued: 0,
      inWindow: 2,
      nextFreeAt: null,
    });
  });

  test('keep starts one keeper per domain; publish signals it; status shows it', async () => {
    const d = domain('keep');
    const first = await cli(['keep', '--domain', d, '--sink', 'cli-hook', '--version', 'v1']);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stdout.trim(), keeperWorkflowId(d));
    const again = await cliInProcess(['keep', '--domain', d, '--sink', 'cli-hook']);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(await env.client.workflow.count(`WorkflowId = "${keeperWorkflowId(d)}"`).then((c) => c.count), 1);

    const published = await cli(['publish', '--domain', d]);
    assert.equal(published.code, 0, published.stderr);
    assert.match(published.stdout, new RegExp(`publish signalled to ${keeperWorkflowId(d).replace(/\./g, '\\.')}`));

    const status = await cli(['status', keeperWorkflowId(d), '--json']);
    assert.equal(status.code, 0, status.stderr);
    const report = lastJson(status.stdout);
    assert.equal(report.type, 'bundleKeeper');
    assert.equal(report.status, 'RUNNING');
    assert.ok(report.details && typeof report.details === 'object', 'the status query answered');

    const noKeeper = await cliInProcess(['publish', '--domain', domain('no-keeper')]);
    assertOneLineError(noKeeper, /no bundle keeper is running/);
    await env.client.workflow.getHandle(keeperWorkflowId(d)).terminate('test done');
  });

  test('schedules: create, describe, list, trigger (a run happens), pause/unpause, update, delete', async () => {
    const d = domain('sched');
    const id = `export:${d}`;
    const created = await cli([
      'schedule',
      'create',
      '--domain',
      d,
      '--every',
      '1h',
      '--cron',
      '30 4 * * 1-5',
      '--timezone',
      'Europe/Paris',
      '--jitter',
      '10s',
    ]);
    assert.equal(created.code, 0, created.stderr);
    assert.equal(created.stdout.trim(), id);

    const described = lastJson((await cliInProcess(['schedule', 'describe', '--domain', d, '--json'])).stdout);
    assert.equal(described.scheduleId, id);
    assert.equal(described.workflowType, 'staticExport');
    assert.deepEqual(described.every, ['1h']);
    assert.deepEqual(described.cron, ['30 4 * * 1-5']);
    assert.equal(described.timezone, 'Europe/Paris');
    assert.equal(described.overlap, 'skip');
    assert.equal(described.paused, false);

    await waitFor(
      async () => {
        const listed = await cliInProcess(['schedule', 'list', '--json']);
        return (lastJson(listed.stdout) as unknown as { scheduleId: string }[]).some((s) => s.scheduleId === id);
      },
      { timeoutMs: 15_000, intervalMs: 300, what: 'the schedule in the list (visibility is eventually consistent)' },
    );
    const listedText = await cli(['schedule', 'list']);
    assert.match(
      listedText.stdout,
      new RegExp(`schedule ${id.replace(/\./g, '\\.')}\n  action:   staticExport for ${d.replace(/\./g, '\\.')}`),
    );

    const triggered = await cli(['schedule', 'trigger', id]);
    assert.equal(triggered.code, 0, triggered.stderr);
    const runId = await waitFor(
      async () => {
        const view = lastJson((await cliInProcess(['schedule', 'describe', id, '--json'])).stdout) as {
          recentActions: { workflowId: string }[];
        };
        return view.recentActions[0]?.workflowId;
      },
      { timeoutMs: 20_000, intervalMs: 500, what: 'the triggered run' },
    );
    assert.match(runId, new RegExp(`^static-export:${d.replace(/\./g, '\\.')}:scheduled`));
    const runResult = (await env.client.workflow.getHandle(runId).result()) as { domain: string };
    assert.equal(runResult.domain, d, 'the scheduled export ran to completion');

    assert.equal((await cli(['schedule', 'pause', id, '--note', 'maintenance'])).code, 0);
    const paused = lastJson((await cliInProcess(['schedule', 'describe', id, '--json'])).stdout);
    assert.equal(paused.paused, true);
    assert.equal(paused.note, 'maintenance');
    assert.equal((await cliInProcess(['schedule', 'unpause', id])).code, 0);
    assert.equal(lastJson((await cliInProcess(['schedule', 'describe', id, '--json'])).stdout).paused, false);

    const updated = await cliInProcess([
      'schedule',
      'update',
      id,
      '--every',
      '2h',
      '--overlap',
      'buffer-one',
      '--version',
      'v3',
    ]);
    assert.equal(updated.code, 0, updated.stderr);
    const after = lastJson((await cliInProcess(['schedule', 'describe', id, '--json'])).stdout);
    assert.deepEqual(after.every, ['2h']);
    assert.deepEqual(after.cron, []);
    assert.equal(after.overlap, 'buffer-one');

    const deleted = await cli(['schedule', 'delete', id]);
    assert.equal(deleted.code, 0, deleted.stderr);
    const gone = await cliInProcess(['schedule', 'describe', id]);
    assertOneLineError(gone, /^error: .*not found/i);
  });
});
