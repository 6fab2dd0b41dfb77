// test-lane: cluster
// A create or message whose outcome is unknown parks the agent job (DocsJobStatus needs-operator)
// until a person settles it: resolve (the job exists), resend (it does not), abandon, or the time
// limit; `docs-admin parked` lists it meanwhile. On a dev server and on the production-shaped cluster,
// the product's worker, the emulator with a 5xx fault on the call.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  abandonAgentJob,
  awaitAgentJob,
  resendAgentJob,
  resolveAgentJob,
  sendAgentMessage,
  startAgentJob,
  type ParkedAgentJob,
  type StartedAgentJob,
} from '../../src/client';
import { runCli } from '../../src/cli/program';
import { NEEDS_OPERATOR, agentStatusQuery, agentWorkflowId, type AgentStatus } from '../../src/shared/agent-job';
import { SearchAttr } from '../../src/shared/search-attributes';
import type { FaultRule } from '../../emulator';
import {
  type DocsAdminStack,
  clusterSkipReason,
  createClusterEnv,
  createDevEnv,
  startDocsAdminStack,
  uniqueTaskQueue,
  waitFor,
} from '../helpers/temporal';
import { failureOf } from '../helpers/failures';
import { failureReason } from '../../src/shared/failures';

const KEY = 'mint_parking_test_key_0123456789';
/** An update the workflow refused, by its failure's `type: message`. */
const refused = (promise: Promise<unknown>, pattern: RegExp) =>
  assert.rejects(promise, (err: unknown) => {
    assert.match(failureReason(err), pattern);
    return true;
  });
let seq = 0;
const uniqueProject = (what: string) => `park-${what}-${process.pid}-${Date.now().toString(36)}-${++seq}`;

const servers = [
  { name: 'dev server', create: () => createDevEnv(), skip: undefined },
  { name: 'cluster', create: () => createClusterEnv(), skip: clusterSkipReason() },
];

for (const server of servers)
  describe(
    `agentJob parks an unknown outcome until an operator settles it (${server.name})`,
    { skip: server.skip },
    () => {
      let env: TestWorkflowEnvironment;
      let stack: DocsAdminStack;
      let client: Client;
      const taskQueue = uniqueTaskQueue('parking');

      before(async () => {
        env = await server.create();
        client = env.client;
        stack = await startDocsAdminStack(
          env,
          { agentActiveMs: 300 },
          { ADMIN_API_KEY: KEY, TEMPORAL_TASK_QUEUE: taskQueue },
        );
      });
      after(async () => {
        await stack?.close();
        await env?.teardown();
      });

      const jobsFor = (projectId: string) => stack.emu.jobs().filter((j) => j.projectId === projectId);
      const status = (workflowId: string) => client.workflow.getHandle(workflowId).query(agentStatusQuery);
      const parked = (workflowId: string) =>
        waitFor(async () => ((await status(workflowId).catch(() => null))?.phase === NEEDS_OPERATOR ? true : null), {
          timeoutMs: 20_000,
          what: `${workflowId} to park`,
        });

      /** Starts a job whose create meets `fault`; resolves once it is parked. */
      async function startParked(projectId: string, kind: FaultRule['kind'], extra: { parkedTimeoutMs?: number } = {}) {
        stack.emu.setFaults([{ route: 'createAgentJob', kind, count: 1 }]);
        const told: AgentStatus[] = [];
        const input = { projectId, prompt: 'Fix the typo on the quickstart page', requestId: 'r1', ...extra };
        const started: Promise<StartedAgentJob> = startAgentJob(client, input, {
          taskQueue,
          onNeedsOperator: (s) => told.push(s),
        });
        started.catch(() => undefined);
        const workflowId = agentWorkflowId(projectId, 'r1');
        await parked(workflowId);
        return { workflowId, started, told };
      }

      test('5xx after the create committed: parked, listed, then resolved with the created job', async () => {
        const projectId = uniqueProject('resolve');
        // Still running when the repeats below arrive: the checks before them take seconds on a loaded machine,
        // and a job resolved after the API finished it completes in the same task (the repeat then finds it closed).
        stack.emu.configure({ agentActiveMs: 15_000 });
        const { workflowId, started, told } = await startParked(projectId, '500-after-commit');
        stack.emu.configure({ agentActiveMs: 300 });
        const s = await status(workflowId);
        assert.equal(s.parked?.operation, 'create');
        assert.equal(s.parked?.projectId, projectId);
        assert.match(s.parked?.check ?? '', /agent jobs of project .* created between/);
        assert.ok(Date.parse(s.parked!.from) <= Date.parse(s.parked!.to));
        const description = await client.workflow.getHandle(workflowId).describe();
        assert.equal(description.typedSearchAttributes.get(SearchAttr.jobStatus), NEEDS_OPERATOR);
        assert.doesNotMatch(JSON.stringify(description.raw.workflowExecutionInfo?.searchAttributes), /quickstart/);
        await waitFor(
          async () => {
            const query = `DocsJobStatus='${NEEDS_OPERATOR}' AND WorkflowId='${workflowId}'`;
            for await (const w of client.workflow.list({ query })) return w.workflowId === workflowId;
            return false;
          },
          { timeoutMs: 10_000, what: 'the parked job in the visibility list' },
        );
        await waitFor(() => told.length === 1, { what: 'the caller to be told once' });
        // `docs-admin parked` lists it, with what a person needs; another project's list does not.
        const listed = await cli(['parked', '--project', projectId, '--json']);
        assert.equal(listed.code, 0, listed.stderr);
        const [entry, ...more] = JSON.parse(listed.stdout) as ParkedAgentJob[];
        assert.equal(more.length, 0);
        assert.equal(entry?.workflowId, workflowId);
        assert.equal(entry?.projectId, projectId);
        assert.equal(entry?.unknown, 'create');
        assert.equal(entry?.parkedAt, s.parked?.to);
        assert.equal(entry?.givesUpAt, s.parked?.deadline);
        assert.equal(entry?.settle.resend, `docs-admin resend ${workflowId}`);
        assert.match(entry?.settle.resolve ?? '', new RegExp(`^docs-admin resolve ${workflowId} --job-id `));
        assert.equal(JSON.parse((await cli(['parked', '--project', `${projectId}-other`, '--json'])).stdout).length, 0);
        assert.match((await cli(['parked'])).stdout, new RegExp(`${workflowId}\\n  project:   ${projectId}\\n`));
        assert.equal((await cli(['parked', '--project', "x' OR 'a'='a"])).code, 2, 'an id that is no id is refused');
        const out: string[] = [];
        const io = { stdout: { write: (t: string) => out.push(t) > 0 }, stderr: { write: () => true }, env: {} };
        assert.equal(await runCli(['status', workflowId], io, async () => client), 0);
        assert.match(out.join(''), /NEEDS AN OPERATOR: the outcome of the create call made between .* is unknown/);
        assert.match(out.join(''), /DocsJobStatus: needs-operator/);
        // The parked state adds no prompt (the start's summary, set by the client, has its preview already).
        const parkedText = out
          .join('')
          .split('\n')
          .filter((line) => !line.includes('summary:'));
        assert.doesNotMatch(parkedText.join('\n'), /quickstart/, 'no prompt in the parked state');

        // Validated before anything changes: a job that does not exist in this project, then the real one.
        const [created] = jobsFor(projectId);
        assert.ok(created, 'the API created the job before its 500');
        await refused(resolveAgentJob(client, workflowId, 'agent_job_does_not_exist'), /no agent job/);
        await refused(resolveAgentJob(client, workflowId, ''), /jobId must not be empty/);
        assert.equal((await status(workflowId)).phase, NEEDS_OPERATOR);
        const adopted = await resolveAgentJob(client, workflowId, created.id);
        assert.equal(adopted.id, created.id);
        // Safe to repeat: the same id is a no-op success, another id is rejected.
        assert.equal((await resolveAgentJob(client, workflowId, created.id)).id, created.id);
        await refused(resolveAgentJob(client, workflowId, 'agent_other'), /no longer waiting.*resolved with job/);
        assert.match((await cli(['parked', '--project', projectId])).stdout, /^no agent job waits for an operator\n$/);

        assert.equal((await started).jobId, created.id);
        const result = await awaitAgentJob(client, workflowId);
        assert.equal(result.jobId, created.id);
        assert.ok(result.prLink, 'completes with its PR link');
        assert.equal(jobsFor(projectId).length, 1, 'no duplicate job');
        const closed = await client.workflow.getHandle(workflowId).describe();
        assert.equal(closed.typedSearchAttributes.get(SearchAttr.jobStatus), 'completed');
      });

      /** Runs the CLI against the test's client; its exit code and what it printed. */
      async function cli(argv: string[]) {
        const out: string[] = [];
        const err: string[] = [];
        const io = {
          stdout: { write: (t: string) => out.push(t) > 0 },
          stderr: { write: (t: string) => err.push(t) > 0 },
          env: {},
        };
        const code = await runCli(argv, io, async () => client);
        return { code, stdout: out.join(''), stderr: err.join('') };
      }

      test('resolve after the API job finished: the job completes in the same task, and the CLI says resolved', async () => {
        const projectId = uniqueProject('resolve-done');
        const { workflowId, started } = await startParked(projectId, '500-after-commit');
        const [created] = jobsFor(projectId);
        assert.ok(created, 'the API created the job before its 500');
        await waitFor(() => jobsFor(projectId)[0]?.status === 'completed', { what: 'the API job to finish' });
        const { prLink } = jobsFor(projectId)[0]!;

        const resolved = await cli(['resolve', workflowId, '--job-id', created.id, '--json']);
        assert.equal(resolved.stderr, '');
        assert.equal(resolved.code, 0);
        const line = JSON.parse(resolved.stdout.trim().split('\n').at(-1) ?? '{}');
        assert.deepEqual(line, { workflowId, jobId: created.id, status: 'completed', prLink });
        assert.equal((await started).jobId, created.id);
        assert.equal((await awaitAgentJob(client, workflowId)).prLink, prLink);

        // Once closed, a command that truly arrives too late says so in one line and exits 1.
        for (const argv of [
          ['resolve', workflowId, '--job-id', created.id],
          ['resend', workflowId],
          ['abandon', workflowId],
        ]) {
          const late = await cli(argv);
          assert.equal(late.code, 1, argv.join(' '));
          assert.match(
            late.stderr,
            new RegExp(
              `^error: \\w+ did not take effect: ${workflowId} had already closed \\(COMPLETED\\) before it arrived\\n$`,
            ),
          );
        }
        assert.equal(jobsFor(projectId).length, 1, 'no duplicate job');
      });

      test('5xx before the create committed: resend creates exactly one job', async () => {
        const projectId = uniqueProject('resend');
        const { workflowId, started } = await startParked(projectId, '500-before-commit');
        assert.equal(jobsFor(projectId).length, 0);
        await resendAgentJob(client, workflowId);
        await resendAgentJob(client, workflowId); // a repeat: no-op
        const result = await awaitAgentJob(client, workflowId);
        assert.equal((await started).jobId, result.jobId);
        assert.ok(result.prLink);
        assert.equal(jobsFor(projectId).length, 1, 'exactly one job');
        await assert.rejects(abandonAgentJob(client, workflowId), /./, 'a finished job cannot be abandoned');
      });

      test('abandon (through the CLI) ends the job with OutcomeUnknown and the reason', async () => {
        const projectId = uniqueProject('abandon');
        const { workflowId, started } = await startParked(projectId, '500-after-commit');
        const out: string[] = [];
        const io = {
          stdout: { write: (s: string) => out.push(s) > 0 },
          stderr: { write: (s: string) => out.push(s) > 0 },
          env: {},
        };
        assert.equal(
          await runCli(['abandon', workflowId, '--reason', 'checked: duplicate of job 42'], io, async () => client),
          0,
        );
        const err = await failureOf(awaitAgentJob(client, workflowId));
        assert.equal(err.type, 'OutcomeUnknown');
        assert.match(err.message, /abandoned by an operator: checked: duplicate of job 42/);
        await assert.rejects(started);
        assert.equal(jobsFor(projectId).length, 1, 'no second job');
      });

      test('a parked job that nobody settles ends with OutcomeUnknown after its time limit', async () => {
        const projectId = uniqueProject('timeout');
        const { workflowId } = await startParked(projectId, '500-after-commit', { parkedTimeoutMs: 2_000 });
        const err = await failureOf(awaitAgentJob(client, workflowId));
        assert.equal(err.type, 'OutcomeUnknown');
        assert.match(err.message, /nobody settled it by/);
      });

      test('a follow-up message whose outcome is unknown parks too; resolve with the job goes on', async () => {
        const projectId = uniqueProject('message');
        stack.emu.configure({ agentActiveMs: 4_000 });
        try {
          const started = await startAgentJob(
            client,
            { projectId, prompt: 'Add a FAQ page', requestId: 'r1' },
            { taskQueue },
          );
          stack.emu.setFaults([{ route: 'sendAgentMessage', kind: '500-after-commit', count: 1 }]);
          const message = sendAgentMessage(client, started.workflowId, 'Also link it from the home page');
          message.catch(() => undefined);
          await parked(started.workflowId);
          const s = await status(started.workflowId);
          assert.equal(s.parked?.operation, 'message');
          await refused(resolveAgentJob(client, started.workflowId, 'agent_other'), /parked message was for/);
          await resolveAgentJob(client, started.workflowId, started.jobId);
          assert.equal((await message).id, started.jobId);
          const result = await awaitAgentJob(client, started.workflowId);
          assert.ok(result.prLink);
          assert.equal(jobsFor(projectId).length, 1);
        } finally {
          stack.emu.configure({ agentActiveMs: 300 });
        }
      });
    },
  );
