// test-lane: cluster
// agentJob end to end: the production-shaped cluster with its default settings (a dev server when
// DOCS_ADMIN_SKIP_CLUSTER=1 or E2E_SERVER=dev-server), a real worker, the admin API emulator over HTTP.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createActivities } from '../../src/activities';
import { AdminApiClient } from '../../src/api/client';
import type { CreateAgentJobInput } from '../../src/activities/agent';
import type { AdminApi } from '../../src/api/types';
import { type EmulatorHandle, startEmulator } from '../../emulator';
import { noopMetrics } from '../../src/observability/metrics';
import {
  type AgentJobInput,
  type AgentJobOptions,
  agentStatusQuery,
  agentWorkflowId,
  jobIdUpdate,
  sendMessageUpdate,
} from '../../src/shared/agent-job';
import { SearchAttr } from '../../src/shared/search-attributes';
import { rateLimiterWorkflowId } from '../../src/shared/rate-limiter';
import { agentJob } from '../../src/workflows';
import { type StartedWorker, createE2eEnv, startWorker, uniqueTaskQueue, waitFor } from '../helpers/temporal';
import { freeLoopbackPort } from '../../src/observability/free-port';
import { failureOf } from '../helpers/failures';
import { sendAgentMessage } from '../../src/client/agent';
import { updateCurrentRun } from '../../src/client/update';

const KEY = 'mint_e2e_test_key_0123456789';
const REVOKED_KEY = 'mint_revoked_key_9876543210';
/** Fast polling: jobs in the emulator are active for a few hundred ms. */
const FAST: AgentJobOptions = { poll: { floorMs: 100, fraction: 0.5, capMs: 400 } };

let seq = 0;
const projects: string[] = [];
const uniqueProject = (what: string): string => {
  const projectId = `e2e-${what}-${process.pid}-${Date.now().toString(36)}-${++seq}`;
  projects.push(projectId);
  return projectId;
};

describe('agentJob against the emulator', () => {
  let env: TestWorkflowEnvironment;
  let emu: EmulatorHandle;
  let worker: StartedWorker | undefined;
  let taskQueue: string;
  const clients: AdminApiClient[] = [];
  /** Projects whose next create goes to a closed port first (connection refused), then to the emulator. */
  const refuseOnce = new Set<string>();
  /** Projects whose first create attempt loses its worker, before sending or after the API answered. */
  const dies = new Map<string, 'before-send' | 'after-answer'>();
  /** Projects whose first create attempt is held up until its permit's use-by time has passed. */
  const heldUp = new Set<string>();
  /** Projects whose create answer reaches the workflow this long after the API gave it (a busy worker). */
  const slowCompletion = new Map<string, number>();

  const totalCalls = (): number =>
    Object.values(emu.counters().calls).reduce(
      (sum, byStatus) => sum + Object.values(byStatus).reduce((a, b) => a + b, 0),
      0,
    );
  const calls = (route: string, status: string): number => emu.counters().calls[route]?.[status] ?? 0;
  const jobsFor = (projectId: string) => emu.jobs().filter((j) => j.projectId === projectId);

  const start = (input: AgentJobInput, options: AgentJobOptions = FAST, workflowId = `agent-e2e-${input.projectId}`) =>
    env.client.workflow.start(agentJob, { taskQueue, workflowId, args: [input, options] });

  before(async () => {
    env = await createE2eEnv();
    emu = await startEmulator({ agentActiveMs: 300, revokedKeys: [REVOKED_KEY] });
    const good = new AdminApiClient({ baseUrl: emu.url, apiKey: KEY });
    const revoked = new AdminApiClient({ baseUrl: emu.url, apiKey: REVOKED_KEY });
    const refused = new AdminApiClient({ baseUrl: `http://127.0.0.1:${await freeLoopbackPort()}`, apiKey: KEY });
    clients.push(good, revoked, refused);
    const api: AdminApi = {
      createAgentJob: (projectId, prompt, o) => {
        if (projectId.includes('-revoked-')) return revoked.createAgentJob(projectId, prompt, o);
        if (refuseOnce.delete(projectId)) return refused.createAgentJob(projectId, prompt, o);
        return good.createAgentJob(projectId, prompt, o);
      },
      getAgentJob: (...args) => good.getAgentJob(...args),
      sendAgentMessage: (...args) => good.sendAgentMessage(...args),
      startExport: (...args) => good.startExport(...args),
      getExport: (...args) => good.getExport(...args),
      generateBundle: (...args) => good.generateBundle(...args),
      triggerUpdate: (...args) => good.triggerUpdate(...args),
      getUpdateStatus: (...args) => good.getUpdateStatus(...args),
    };
    taskQueue = uniqueTaskQueue('agent-e2e');
    const real = createActivities({
      api,
      metrics: noopMetrics,
      temporal: env.client,
      agentRateLimit: { limit: 100, windowMs: 10_000 },
      bundleHosts: [],
    });
    worker = await startWorker(env, {
      taskQueue,
      activities: {
        ...real,
        // A worker that dies mid-attempt, simulated: the attempt stops answering (and so times out) either
        // before sending, or after the API answered and the real activity recorded its checkpoints.
        async createAgentJob(input: Parameters<typeof real.createAgentJob>[0]) {
          const useByMs = input.permit?.useByMs;
          if (useByMs !== undefined && heldUp.delete(input.projectId)) {
            // Held up, but alive: heartbeating, as the real attempt's keep-alive does while it waits.
            while (Date.now() < useByMs + 200) {
              Context.current().heartbeat();
              await Context.current().sleep(Math.min(1_000, useByMs + 200 - Date.now()));
            }
          }
          const lateBy = slowCompletion.get(input.projectId);
          if (lateBy !== undefined) {
            const answer = await real.createAgentJob(input);
            await Context.current().sleep(lateBy);
            return answer;
          }
          const death = dies.get(input.projectId);
          if (!death) return real.createAgentJob(input);
          dies.delete(input.projectId);
          if (death === 'after-answer') await real.createAgentJob(input);
          await Context.current().sleep(30_000);
          throw new Error('the simulated dead worker woke up');
        },
      },
    });
  });

  after(async () => {
    // Limiters would otherwise wait for this task queue for ever on a shared server (TEMPORAL_ADDRESS).
    await Promise.all(
      projects.map((p) =>
        env.client.workflow
          .getHandle(rateLimiterWorkflowId(p))
          .terminate('test finished')
          .catch(() => undefined),
      ),
    );
    await worker?.stop();
    await Promise.all(clients.map((c) => c.close()));
    await emu?.close();
    await env?.teardown();
  });

  test('a job returns its PR link, visible in the status query and search attributes (default polling)', async () => {
    const projectId = uniqueProject('pr');
    const handle = await start({ projectId, prompt: 'Document the new /v2/agent endpoints' }, {});
    const result = await handle.result();
    assert.equal(result.status, 'completed');
    assert.match(result.prLink ?? '', /^https:\/\/github\.com\/.+\/pull\/\d+$/);
    const [job] = jobsFor(projectId);
    assert.equal(result.jobId, job?.id);
    assert.equal(jobsFor(projectId).length, 1);

    const status = await handle.query(agentStatusQuery);
    assert.deepEqual([status.phase, status.jobId, status.prLink], ['done', result.jobId, result.prLink]);
    const described = await handle.describe();
    assert.equal(described.typedSearchAttributes.get(SearchAttr.projectId), projectId);
    assert.equal(described.typedSearchAttributes.get(SearchAttr.jobId), result.jobId);
    assert.equal(described.typedSearchAttributes.get(SearchAttr.jobStatus), 'completed');
    assert.equal(described.typedSearchAttributes.get(SearchAttr.prLink), result.prLink);
  });

  test('the first poll is due a floor after the API answered the create, however late the answer reached the workflow', async () => {
    const projectId = uniqueProject('late-answer');
    slowCompletion.set(projectId, 2_000);
    const floorMs = 3_000;
    const handle = await start(
      { projectId, prompt: 'Add a glossary (the answer reaches the workflow 2 s late)' },
      { poll: { floorMs, fraction: 0.5, capMs: 4_000 } },
    );
    await handle.result();
    const [job] = jobsFor(projectId);
    const events = (await handle.fetchHistory()).events ?? [];
    const completedAt = events.findIndex((e) => e.activityTaskCompletedEventAttributes);
    const timerAt = events.findIndex((e, i) => i > completedAt && e.timerStartedEventAttributes);
    // The workflow's clock when it set the timer: its task's start (a loaded server fires timers late,
    // so the fired event's time says nothing about what the workflow asked for).
    const taskStarted = events.slice(0, timerAt).findLast((e) => e.workflowTaskStartedEventAttributes);
    const timeout = events[timerAt]?.timerStartedEventAttributes?.startToFireTimeout;
    assert.ok(job && taskStarted?.eventTime && timeout, 'the job was created and its first poll waited on a timer');
    const ms = (t: { seconds?: unknown; nanos?: number | null }) =>
      Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
    const afterAnswerMs = ms(taskStarted.eventTime) + ms(timeout) - Date.parse(job.createdAt);
    // The floor (plus up to 10 % jitter) after the answer; counted from the workflow's late receipt it
    // would be 2 s more.
    assert.ok(
      afterAnswerMs >= floorMs - 100,
      `first poll due ${afterAnswerMs} ms after the answer: sooner than the floor`,
    );
    assert.ok(afterAnswerMs <= floorMs * 1.1 + 100, `first poll due ${afterAnswerMs} ms after the answer`);
  });

  test('"[no-change]" completes with prLink null: a success', async () => {
    const projectId = uniqueProject('nochange');
    const result = await (await start({ projectId, prompt: 'Check the spelling [no-change]' })).result();
    assert.equal(result.status, 'completed');
    assert.equal(result.prLink, null);
    assert.equal(typeof result.model, 'string');
  });

  test('"[fail]" fails the workflow with AgentJobFailed naming the job id', async () => {
    const projectId = uniqueProject('fail');
    const failure = await failureOf((await start({ projectId, prompt: 'Break everything [fail]' })).result());
    const [job] = jobsFor(projectId);
    assert.ok(job);
    assert.equal(failure.type, 'AgentJobFailed');
    assert.equal(failure.nonRetryable, true);
    assert.ok(failure.message.includes(job.id), failure.message);
  });

  test('a follow-up message returns the refreshed job, polling resumes, and the result follows', async () => {
    const projectId = uniqueProject('message');
    emu.configure({ agentActiveMs: 1_500 });
    try {
      const handle = await start({ projectId, prompt: 'Add a quickstart [no-change]' });
      const jobId = await handle.executeUpdate(jobIdUpdate);
      const refreshed = await handle.executeUpdate(sendMessageUpdate, { args: ['Also link it from the home page'] });
      assert.equal(refreshed.id, jobId);
      assert.equal(refreshed.status, 'active');
      const result = await handle.result();
      assert.equal(result.jobId, jobId);
      assert.equal(result.status, 'completed');
      // The follow-up changed the outcome from "no change" to a pull request.
      assert.match(result.prLink ?? '', /\/pull\/\d+$/);
      assert.deepEqual(jobsFor(projectId)[0]?.messages, ['Also link it from the home page']);

      // An invalid follow-up is rejected by the validator, before anything is sent.
      const h2 = await start({ projectId, prompt: 'Another job' }, FAST, `agent-e2e-${projectId}-2`);
      await h2.executeUpdate(jobIdUpdate);
      const messagesBefore = emu.counters().agentMessages;
      await assert.rejects(h2.executeUpdate(sendMessageUpdate, { args: ['   '] }), (err: unknown) => {
        assert.ok(err instanceof WorkflowUpdateFailedError);
        assert.ok(err.cause instanceof ApplicationFailure && err.cause.type === 'InvalidInput', String(err.cause));
        return true;
      });
      await h2.result();
      assert.equal(emu.counters().agentMessages, messagesBefore);
    } finally {
      emu.configure({ agentActiveMs: 300 });
    }
  });

  test('a long job continues as new with bounded history and keeps answering jobId and sendMessage', async () => {
    const projectId = uniqueProject('can');
    // Active long enough for the two polls before the continue-as-new on a loaded machine: at 2.5 s, with
    // five cluster files at once, the second poll (4 s after the create) found the job done, and the run
    // completed without continuing as new.
    emu.configure({ agentActiveMs: 6_000 });
    try {
      const handle = await start(
        { projectId, prompt: 'Reorganize the navigation [no-change]' },
        { ...FAST, maxPollsPerRun: 2 },
      );
      const jobId = await handle.executeUpdate(jobIdUpdate);
      const firstRunId = (await handle.describe()).runId;
      await waitFor(async () => (await handle.describe()).runId !== firstRunId, {
        timeoutMs: 15_000,
        what: 'continue-as-new',
      });
      // The continued run still knows the job and accepts a follow-up (sent as users send it: the
      // job continues as new every two polls, and an update racing that goes to the next run).
      assert.equal(await updateCurrentRun(env.client, handle.workflowId, jobIdUpdate), jobId);
      const refreshed = await sendAgentMessage(env.client, handle.workflowId, 'Keep the old URLs working');
      assert.equal(refreshed.id, jobId);
      const result = await handle.result();
      assert.equal(result.jobId, jobId);
      assert.match(result.prLink ?? '', /\/pull\/\d+$/);
      assert.equal(jobsFor(projectId).length, 1);
      const status = await handle.query(agentStatusQuery);
      assert.ok(status.polls >= 2, `polls carried across runs: ${status.polls}`);
    } finally {
      emu.configure({ agentActiveMs: 300 });
    }
  });

  test('update-with-start returns the job id before the job completes', async () => {
    const projectId = uniqueProject('early');
    emu.configure({ agentActiveMs: 3_000 });
    try {
      const startOperation = new WithStartWorkflowOperation(agentJob, {
        taskQueue,
        workflowId: agentWorkflowId(projectId, 'early-1'),
        workflowIdConflictPolicy: 'USE_EXISTING',
        args: [{ projectId, prompt: 'Explain rate limits', requestId: 'early-1' }, FAST],
      });
      const jobId = await env.client.workflow.executeUpdateWithStart(jobIdUpdate, {
        startWorkflowOperation: startOperation,
      });
      const handle = await startOperation.workflowHandle();
      assert.equal(jobsFor(projectId)[0]?.id, jobId);
      assert.equal((await handle.query(agentStatusQuery)).status, 'active');
      assert.equal((await handle.describe()).status.name, 'RUNNING');
      assert.equal((await handle.result()).jobId, jobId);
    } finally {
      emu.configure({ agentActiveMs: 300 });
    }
  });

  test('the same requestId triggered twice starts one job', async () => {
    const projectId = uniqueProject('dedup');
    const requestId = 'ticket-4711';
    const trigger = async () => {
      const op = new WithStartWorkflowOperation(agentJob, {
        taskQueue,
        workflowId: agentWorkflowId(projectId, requestId),
        workflowIdConflictPolicy: 'USE_EXISTING',
        args: [{ projectId, prompt: 'Update the changelog', requestId }, FAST],
      });
      const jobId = await env.client.workflow.executeUpdateWithStart(jobIdUpdate, { startWorkflowOperation: op });
      return { jobId, runId: (await (await op.workflowHandle()).describe()).runId };
    };
    const [a, b] = await Promise.all([trigger(), trigger()]);
    assert.equal(a.jobId, b.jobId);
    assert.equal(a.runId, b.runId);
    await env.client.workflow.getHandle(agentWorkflowId(projectId, requestId)).result();
    assert.equal(emu.counters().agentJobsCreated[projectId], 1);
  });

  for (const kind of ['500-after-commit', 'reset-after-commit', '500-before-commit'] as const) {
    test(`a create that fails with ${kind} parks, then ends in a clear OutcomeUnknown failure, never a duplicate`, async () => {
      const projectId = uniqueProject(kind);
      const prompt = `Rewrite the authentication guide (${kind})`;
      emu.setFaults([{ route: 'createAgentJob', kind, count: 1 }]);
      try {
        // Parked until its time limit (test/integration/agent-parking.test.ts settles parked jobs).
        const handle = await start({ projectId, prompt, requestId: `req-${kind}`, parkedTimeoutMs: 1_000 });
        const failure = await failureOf(handle.result());
        assert.equal(failure.type, 'OutcomeUnknown');
        assert.equal(failure.nonRetryable, true);
        for (const part of [projectId, `req-${kind}`, 'unknown', 'nobody settled it']) {
          assert.ok(failure.message.includes(part), `message names "${part}": ${failure.message}`);
        }
        assert.match(failure.message, /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);
        assert.ok(!failure.message.includes(KEY), 'the key never appears');
        // Exactly one create attempt reached the emulator: not retried.
        const attempts = emu.jobs().filter((j) => j.prompt === prompt).length;
        assert.equal(attempts, kind === '500-before-commit' ? 0 : 1);
        assert.ok((emu.counters().faultsInjected[kind] ?? 0) >= 1, 'the fault fired');
      } finally {
        emu.setFaults([]);
      }
    });
  }

  test('a create attempt that outlives its timeout (its worker died mid-request) ends OutcomeUnknown, never re-sent', async () => {
    const projectId = uniqueProject('attempt-timeout');
    const prompt = 'Reorganize the API reference (attempt timeout)';
    const slowBefore = emu.counters().faultsInjected.slow ?? 0;
    const createdBefore = calls('createAgentJob', '201');
    emu.setFaults([{ route: 'createAgentJob', kind: 'slow', count: 1, delayMs: 5_000 }]);
    try {
      const handle = await start(
        { projectId, prompt, parkedTimeoutMs: 1_000 },
        { ...FAST, nonIdempotentCallTimeoutMs: 1_500 },
      );
      const failure = await failureOf(handle.result());
      assert.equal(failure.type, 'OutcomeUnknown');
      assert.ok(failure.message.includes(projectId), failure.message);
      assert.equal((emu.counters().faultsInjected.slow ?? 0) - slowBefore, 1, 'the slow attempt reached the emulator');
      // The slow request does land: the job exists once, and no second attempt ever created another.
      await waitFor(() => calls('createAgentJob', '201') > createdBefore, {
        timeoutMs: 15_000,
        what: 'the slow create to land',
      });
      assert.equal(jobsFor(projectId).length, 1);
    } finally {
      emu.setFaults([]);
    }
  });

  test('an attempt whose worker died before sending is sent again: exactly one job', async () => {
    const projectId = uniqueProject('dies-before-send');
    dies.set(projectId, 'before-send');
    const createdBefore = calls('createAgentJob', '201');
    const handle = await start(
      { projectId, prompt: 'Add a quickstart (first worker dies)' },
      { ...FAST, nonIdempotentCallTimeoutMs: 1_500 },
    );
    const result = await handle.result();
    assert.equal(result.status, 'completed');
    assert.equal(dies.has(projectId), false, 'the first attempt ran and stalled');
    assert.equal(jobsFor(projectId).length, 1);
    assert.equal(calls('createAgentJob', '201') - createdBefore, 1);
    const attempts = (await handle.fetchHistory()).events?.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'createAgentJob',
    );
    assert.equal(attempts?.length, 2, 'one stalled attempt, one that sent');
  });

  test("a create held up past its permit's use-by time sends nothing and asks for a new permit: one job", async () => {
    const projectId = uniqueProject('held-up');
    heldUp.add(projectId);
    const createdBefore = calls('createAgentJob', '201');
    const handle = await start({ projectId, prompt: 'Add a FAQ (the first attempt is held up)' });
    const result = await handle.result();
    assert.equal(result.status, 'completed');
    assert.equal(heldUp.has(projectId), false, 'the first attempt carried a use-by time and was held up past it');
    assert.equal(jobsFor(projectId).length, 1);
    assert.equal(calls('createAgentJob', '201') - createdBefore, 1);
    const keys = (await handle.fetchHistory()).events
      ?.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'createAgentJob')
      .map(
        (e) =>
          (
            JSON.parse(
              Buffer.from(e.activityTaskScheduledEventAttributes!.input!.payloads![0]!.data!).toString(),
            ) as CreateAgentJobInput
          ).permit?.requestKey,
      );
    assert.equal(keys?.length, 2, 'the expired attempt, then one under a new permit');
    assert.match(String(keys?.[1]), /:renewed-1$/);
  });

  test('an attempt whose worker died after the API answered: the recorded answer is the result, nothing re-sent', async () => {
    const projectId = uniqueProject('dies-after-answer');
    dies.set(projectId, 'after-answer');
    const createdBefore = calls('createAgentJob', '201');
    const handle = await start(
      { projectId, prompt: 'Add a changelog (worker dies after the answer)' },
      { ...FAST, nonIdempotentCallTimeoutMs: 1_500 },
    );
    const result = await handle.result();
    assert.equal(result.status, 'completed');
    const [job] = jobsFor(projectId);
    assert.equal(jobsFor(projectId).length, 1);
    assert.equal(result.jobId, job?.id);
    assert.equal(calls('createAgentJob', '201') - createdBefore, 1);
    const attempts = (await handle.fetchHistory()).events?.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'createAgentJob',
    );
    assert.equal(attempts?.length, 1, 'the timed-out attempt was not repeated');
  });

  test('connection refused and 429 on create are retried and end with exactly one job', async () => {
    const refusedProject = uniqueProject('refused');
    refuseOnce.add(refusedProject);
    const refusedResult = await (await start({ projectId: refusedProject, prompt: 'Fix broken links' })).result();
    assert.equal(refuseOnce.has(refusedProject), false, 'the refused connection happened');
    assert.equal(jobsFor(refusedProject).length, 1);
    assert.equal(refusedResult.jobId, jobsFor(refusedProject)[0]?.id);

    const limitedProject = uniqueProject('429');
    const limitedBefore = calls('createAgentJob', '429');
    emu.setFaults([{ route: 'createAgentJob', kind: '429', count: 1, retryAfterSeconds: 2 }]);
    try {
      const startedAt = Date.now();
      const result = await (await start({ projectId: limitedProject, prompt: 'Add examples' })).result();
      assert.equal(calls('createAgentJob', '429') - limitedBefore, 1);
      assert.equal(jobsFor(limitedProject).length, 1);
      assert.equal(result.jobId, jobsFor(limitedProject)[0]?.id);
      // Retry-After (2 s) was honoured through nextRetryDelay; the retry policy alone would wait 1 s.
      assert.ok(Date.now() - startedAt >= 1_900, `waited ${Date.now() - startedAt}ms for Retry-After`);
    } finally {
      emu.setFaults([]);
    }
  });

  test('bad input fails fast: InvalidInput with zero API calls; a 401 after exactly one call', async () => {
    for (const input of [
      { projectId: uniqueProject('empty'), prompt: '' },
      { projectId: '', prompt: 'No project' },
      { prompt: 'Missing project' } as unknown as AgentJobInput,
    ]) {
      const before = totalCalls();
      const failure = await failureOf((await start(input, FAST, `agent-e2e-invalid-${++seq}`)).result());
      assert.equal(failure.type, 'InvalidInput');
      assert.equal(failure.nonRetryable, true);
      assert.equal(totalCalls(), before, 'no API call for invalid input');
    }

    const projectId = uniqueProject('revoked-');
    const before401 = calls('createAgentJob', '401');
    const handle = await start({ projectId, prompt: 'Anything' });
    const failure = await failureOf(handle.result());
    assert.equal(failure.type, 'Unauthorized');
    assert.equal(failure.nonRetryable, true);
    assert.ok(!failure.message.includes(REVOKED_KEY), 'the key is redacted');
    assert.equal(calls('createAgentJob', '401') - before401, 1, 'exactly one call: never retried');
    await waitFor(async () => (await handle.describe()).status.name === 'FAILED', { what: 'workflow failed' });
  });
});
