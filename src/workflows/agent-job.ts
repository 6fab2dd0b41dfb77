// agentJob: one agent job from prompt to pull request. Validates the input (no API call for a bad
// one), takes a permit from the project's rate limiter, creates the job, polls it durably until it is
// completed, archived or failed, and surfaces the job id and the PR link as early as they exist: the
// `jobId` update, the `status` query, the Web UI's current details, and search attributes.
//
// Follow-up messages arrive as the `sendMessage` update (validated, serialized, rate-limited) and
// resume polling. A create or message whose outcome is unknown is never retried: the workflow (or
// the update) fails with OutcomeUnknown naming what to check, rather than risk a second pull request.
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { PermitUse } from '../activities/agent';
import { AGENT_TERMINAL_STATUSES, type AgentJob } from '../api/types';
import {
  type AgentJobCarry,
  type AgentJobInput,
  type AgentJobOptions,
  type AgentJobResult,
  type AgentObservation,
  type AgentStatus,
  SearchAttr,
  agentStatusQuery,
  jobIdUpdate,
  sendMessageUpdate,
} from '../shared';
import { promptPreview, validateAgentJobInput, validatePrompt } from '../policies/validation/agent';
import { ApiFailure, WorkflowFailure, failureType } from '../shared/failures';
import { ProjectPermits } from './permits';
import { agentPollDelay, recentObservations } from '../policies/polling';
import { callOnceSafely } from './send-once';

/** Admin API calls: Temporal owns retries; 429 honours Retry-After through nextRetryDelay. */
const API_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '60s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '60s' },
};
/**
 * Create and message are not idempotent: one attempt per activity (src/workflows/send-once.ts settles
 * a timed-out attempt by its send checkpoints instead of re-running it).
 */
const NON_IDEMPOTENT_TIMEOUT_MS = 60_000;
const NON_IDEMPOTENT_OPTIONS: ActivityOptions = { startToCloseTimeout: NON_IDEMPOTENT_TIMEOUT_MS, retry: { maximumAttempts: 1 } };

const api = proxyActivities<Activities>(API_OPTIONS);
/**
 * Status polls (GET, idempotent, short) as local activities: run inside the workflow task the poll
 * timer wakes, one marker event per poll. Same retry policy; Core honours nextRetryDelay (Retry-After).
 */
const pollApi = proxyLocalActivities<Activities>({ startToCloseTimeout: API_OPTIONS.startToCloseTimeout, retry: API_OPTIONS.retry });

const isTerminal = (status: string | null): boolean =>
  status !== null && (AGENT_TERMINAL_STATUSES as readonly string[]).includes(status);

function invalidInput(problems: string[]): ApplicationFailure {
  return ApplicationFailure.create({ type: WorkflowFailure.invalidInput, message: `invalid agent job input: ${problems.join('; ')}`, nonRetryable: true });
}

// Longer than 80 lines on purpose: a workflow function is its state, the handlers registered over that
// state and its lifecycle, in one closure, so every read and write of the state is in view. Moving the
// state into a class of its own module (samples-typescript safe-message-handlers) is a change of
// deterministic code that waits for the replay corpus (issue 13) to prove old histories still replay.
// eslint-disable-next-line max-lines-per-function -- one closure per workflow, see above
export async function agentJob(input: AgentJobInput, options: AgentJobOptions = {}): Promise<AgentJobResult> {
  const info = workflowInfo();
  const carry: AgentJobCarry | undefined = options.carry;
  /** One create or message attempt; a permit handed on ahead of time adds its wait (the activity sleeps until notBefore). */
  const nonIdempotentOptions = (permit: PermitUse): ActivityOptions => ({
    ...NON_IDEMPOTENT_OPTIONS,
    startToCloseTimeout: (options.nonIdempotentCallTimeoutMs ?? NON_IDEMPOTENT_TIMEOUT_MS) + Math.max(0, (permit.notBeforeMs ?? 0) - Date.now()),
  });

  let job: AgentJob | null = carry?.job ?? null;
  let observations: AgentObservation[] = carry?.observations.map((o) => ({ ...o })) ?? [];
  let polls = carry?.polls ?? 0;
  let pollsThisRun = 0;
  let messagesSent = carry?.messagesSent ?? 0;
  let phase: AgentStatus['phase'] = carry ? 'polling' : 'waiting-for-permit';
  let lastPollAt: string | null = null;
  let nextPollAt: string | null = null;
  /** Why the job will never have an id (bad input, create failed): pending jobId updates fail with it. */
  let startFailure: ApplicationFailure | null = null;
  /** Set when the workflow is about to return: new messages are rejected. */
  let finishing = false;
  /** One update at a time (create/message/poll ordering stays simple). */
  let messaging = false;
  /** Bumped by every message: a poll that started before a message is stale. */
  let generation = 0;
  /** Wakes the poll loop early (after a message). */
  let wake = false;
  const startedAtMs = carry?.startedAtMs ?? Date.now();

  /** Every create and message runs under a permit of the project's rate limiter. */
  const permits = new ProjectPermits(input.projectId, () => {
    if (phase === 'creating' || phase === 'waiting-for-permit') phase = permits.waitingFor ? 'waiting-for-permit' : 'creating';
    publish();
  });

  // ---- surfaces -----------------------------------------------------------------------------------
  const status = (): AgentStatus => ({
    phase,
    jobId: job?.id ?? null,
    status: job?.status ?? null,
    prLink: job?.prLink ?? null,
    polls,
    lastPollAt,
    nextPollAt,
    waitingFor: permits.waitingFor,
  });

  let shownStatus: string | null = null;
  let shownPrLink: string | null = null;
  const publish = (): void => {
    // A blank line after the heading, or the Web UI renders the list as one paragraph.
    const lines = [`**Agent job** for project \`${input.projectId}\` — ${phase}`, ''];
    if (job) {
      lines.push(`- Job: \`${job.id}\`, status **${job.status}**`);
      lines.push(`- Pull request: ${job.prLink ? `[${job.prLink}](${job.prLink})` : isTerminal(job.status) ? 'none (no changes)' : 'not yet'}`);
    }
    lines.push(`- Polls: ${polls}${lastPollAt ? `, last ${lastPollAt}` : ''}${nextPollAt && !isTerminal(job?.status ?? null) ? `, next ${nextPollAt}` : ''}`);
    if (messagesSent > 0) lines.push(`- Follow-up messages: ${messagesSent}`);
    if (permits.waitingFor) lines.push(`- Waiting for ${permits.waitingFor}`);
    setCurrentDetails(lines.join('\n'));

    if (job && (job.status !== shownStatus || job.prLink !== shownPrLink)) {
      const updates: Parameters<typeof upsertSearchAttributes>[0] = [
        { key: SearchAttr.jobId, value: job.id },
        { key: SearchAttr.jobStatus, value: job.status },
      ];
      if (job.prLink) updates.push({ key: SearchAttr.prLink, value: job.prLink });
      upsertSearchAttributes(updates);
      shownStatus = job.status;
      shownPrLink = job.prLink;
    }
  };

  const observe = (next: AgentJob, restart: boolean): void => {
    job = next;
    const observation = { atMs: Date.now(), status: next.status };
    observations = restart ? [observation] : recentObservations([...observations, observation]);
    publish();
  };

  // ---- handlers (registered first: update-with-start delivers jobId in the first task) ------------
  setHandler(agentStatusQuery, status);
  setHandler(jobIdUpdate, async () => {
    await condition(() => job !== null || startFailure !== null);
    if (job) return job.id;
    throw startFailure!;
  });
  setHandler(
    sendMessageUpdate,
    async (prompt) => {
      await condition(() => (job !== null && !messaging) || startFailure !== null);
      if (!job) throw startFailure!;
      if (finishing) throw ApplicationFailure.create({ type: WorkflowFailure.invalidInput, message: `agent job ${job.id} has already finished`, nonRetryable: true });
      messaging = true;
      const previousPhase = phase;
      try {
        const jobId = job.id;
        const attemptedAt = new Date().toISOString();
        messagesSent += 1;
        let refreshed: AgentJob;
        try {
          refreshed = await permits.run(`${info.runId}:message:${messagesSent}`, (permit) => {
            phase = 'messaging';
            publish();
            return callOnceSafely(() =>
              api.sendAgentMessage.executeWithOptions(
                { ...nonIdempotentOptions(permit), summary: `send follow-up message to agent job ${jobId}` },
                [{ projectId: input.projectId, jobId, prompt, permit }],
              ),
            );
          });
        } catch (err) {
          if (failureType(err) === ApiFailure.outcomeUnknown) {
            throw ApplicationFailure.create({
              type: ApiFailure.outcomeUnknown,
              nonRetryable: true,
              message:
                `the outcome of the follow-up message to agent job ${jobId} is unknown (project "${input.projectId}", ` +
                `attempted at ${attemptedAt}, prompt starting "${promptPreview(prompt)}"). It was not retried, to avoid ` +
                `running the instruction twice: check the job and its pull request before sending it again`,
              cause: err as Error,
            });
          }
          throw err;
        }
        generation += 1;
        observe(refreshed, true);
        wake = true;
        return refreshed;
      } finally {
        messaging = false;
        phase = previousPhase === 'messaging' || previousPhase === 'waiting-for-permit' ? 'polling' : previousPhase;
        publish();
      }
    },
    {
      validator: (prompt: unknown) => {
        const problems = validatePrompt(prompt);
        if (problems.length > 0) throw invalidInput(problems);
        if (finishing || startFailure) throw new Error('the agent job has already finished');
      },
    },
  );

  const fail = async (failure: ApplicationFailure): Promise<never> => {
    startFailure = startFailure ?? failure;
    phase = 'failed';
    publish();
    await condition(allHandlersFinished);
    await permits.delivered();
    throw failure;
  };

  // ---- start --------------------------------------------------------------------------------------
  const problems = validateAgentJobInput(input);
  if (problems.length > 0) return fail(invalidInput(problems));
  // Starters through src/client.ts set it already: no extra event and visibility write per job then.
  if (info.typedSearchAttributes.get(SearchAttr.projectId) !== input.projectId) {
    upsertSearchAttributes([{ key: SearchAttr.projectId, value: input.projectId }]);
  }

  if (!job) {
    publish();
    let attemptedAt = new Date().toISOString();
    try {
      const created = await permits.run(`${info.runId}:create`, (permit) => {
        phase = 'creating';
        publish();
        attemptedAt = new Date().toISOString();
        return callOnceSafely(() =>
          api.createAgentJob.executeWithOptions(
            { ...nonIdempotentOptions(permit), summary: `create agent job for project ${input.projectId}` },
            [{ projectId: input.projectId, prompt: input.prompt, permit }],
          ),
        );
      });
      observe(created, true);
    } catch (err) {
      if (isCancellation(err)) throw err;
      if (failureType(err) === ApiFailure.outcomeUnknown) {
        return fail(
          ApplicationFailure.create({
            type: ApiFailure.outcomeUnknown,
            nonRetryable: true,
            message:
              `the outcome of creating the agent job is unknown: the request may have reached the API. Project ` +
              `"${input.projectId}", request id ${input.requestId ? `"${input.requestId}"` : '(none)'}, attempted at ` +
              `${attemptedAt}, prompt starting "${promptPreview(input.prompt)}". It was not retried, to avoid a ` +
              `duplicate job and pull request: check the project's agent jobs and pull requests opened since then ` +
              `before starting it again`,
            cause: err as Error,
          }),
        );
      }
      const type = failureType(err) ?? 'Error';
      return fail(
        ApplicationFailure.create({
          type,
          nonRetryable: true,
          message: `creating the agent job for project "${input.projectId}" failed: ${(err as Error).message}`,
          cause: err as Error,
        }),
      );
    }
    phase = 'polling';
    publish();
  } else {
    publish();
  }

  // ---- poll until terminal ------------------------------------------------------------------------
  for (;;) {
    await pollUntilTerminal();
    finishing = true;
    await condition(allHandlersFinished);
    // A message accepted just before `finishing` may have restarted the job.
    if (isTerminal(job!.status)) break;
    finishing = false;
  }

  const final: AgentJob = job!;
  nextPollAt = null;
  await permits.delivered();
  if (final.status === 'failed') {
    phase = 'failed';
    publish();
    throw ApplicationFailure.create({
      type: WorkflowFailure.agentJobFailed,
      nonRetryable: true,
      message: `agent job ${final.id} of project "${input.projectId}" failed`,
      details: [{ jobId: final.id, projectId: input.projectId, status: final.status }],
    });
  }
  phase = 'done';
  publish();
  return {
    jobId: final.id,
    status: final.status,
    prLink: final.prLink,
    source: final.source,
    model: final.model,
    createdAt: final.createdAt,
  };

  async function pollUntilTerminal(): Promise<void> {
    for (;;) {
      if (messaging) await condition(() => !messaging);
      if (isTerminal(job!.status)) return;

      const maxPolls = options.maxPollsPerRun;
      if (workflowInfo().continueAsNewSuggested || (maxPolls !== undefined && pollsThisRun >= maxPolls)) {
        await condition(() => allHandlersFinished() && !messaging);
        await permits.delivered();
        const next: AgentJobCarry = { job: job!, observations: recentObservations(observations), polls, messagesSent, startedAtMs };
        await continueAsNew<typeof agentJob>(input, { ...options, carry: next });
      }

      const now = Date.now();
      const delay = agentPollDelay(observations, now, options.poll);
      nextPollAt = new Date(now + delay).toISOString();
      publish();
      wake = false;
      await condition(() => wake, delay);
      if (messaging || wake) continue;

      const seen = generation;
      const polled = await pollApi.getAgentJob.executeWithOptions(
        { startToCloseTimeout: API_OPTIONS.startToCloseTimeout, retry: API_OPTIONS.retry, summary: `poll agent job ${job!.id}` },
        [{ projectId: input.projectId, jobId: job!.id }],
      );
      polls += 1;
      pollsThisRun += 1;
      lastPollAt = new Date().toISOString();
      // A message sent while this poll was in flight supersedes its answer.
      if (seen === generation && !messaging) observe(polled, false);
      else publish();
    }
  }
}
