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
  ACTIVITY_HEARTBEAT_TIMEOUT_MS,
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
  heartbeatTimeout: ACTIVITY_HEARTBEAT_TIMEOUT_MS,
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '60s' },
};
/**
 * Create and message are not idempotent: one attempt per activity (src/workflows/send-once.ts settles
 * a timed-out attempt by its send checkpoints instead of re-running it).
 */
const NON_IDEMPOTENT_TIMEOUT_MS = 60_000;
const NON_IDEMPOTENT_OPTIONS: ActivityOptions = {
  startToCloseTimeout: NON_IDEMPOTENT_TIMEOUT_MS,
  heartbeatTimeout: ACTIVITY_HEARTBEAT_TIMEOUT_MS,
  retry: { maximumAttempts: 1 },
};

const api = proxyActivities<Activities>(API_OPTIONS);
/**
 * Status polls (GET, idempotent, short) as local activities: run inside the workflow task the poll
 * timer wakes, one marker event per poll. Same retry policy; Core honours nextRetryDelay (Retry-After).
 */
const pollApi = proxyLocalActivities<Activities>({
  startToCloseTimeout: API_OPTIONS.startToCloseTimeout,
  retry: API_OPTIONS.retry,
});

const isTerminal = (status: string | null): boolean =>
  status !== null && (AGENT_TERMINAL_STATUSES as readonly string[]).includes(status);

function invalidInput(problems: string[]): ApplicationFailure {
  return ApplicationFailure.create({
    type: WorkflowFailure.invalidInput,
    message: `invalid agent job input: ${problems.join('; ')}`,
    nonRetryable: true,
  });
}

/**
 * One agent job run: its state (the job, observations, polls, messages, phase), the surfaces that show
 * it (the `status` query, current details, search attributes), the `jobId` and `sendMessage` updates,
 * and the create, poll and finish steps. The workflow function below is the lifecycle.
 */
class AgentRun {
  readonly info = workflowInfo();
  job: AgentJob | null;
  private observations: AgentObservation[];
  private polls: number;
  private pollsThisRun = 0;
  private messagesSent: number;
  private phase: AgentStatus['phase'];
  private lastPollAt: string | null = null;
  private nextPollAt: string | null = null;
  /** Why the job will never have an id (bad input, create failed): pending jobId updates fail with it. */
  private startFailure: ApplicationFailure | null = null;
  /** Set when the workflow is about to return: new messages are rejected. */
  finishing = false;
  /** One update at a time (create/message/poll ordering stays simple). */
  private messaging = false;
  /** Bumped by every message: a poll that started before a message is stale. */
  private generation = 0;
  /** Wakes the poll loop early (after a message). */
  private wake = false;
  private readonly startedAtMs: number;
  /** Every create and message runs under a permit of the project's rate limiter. */
  readonly permits: ProjectPermits;
  private shownStatus: string | null = null;
  private shownPrLink: string | null = null;

  constructor(
    readonly input: AgentJobInput,
    readonly options: AgentJobOptions,
  ) {
    const carry: AgentJobCarry | undefined = options.carry;
    this.job = carry?.job ?? null;
    this.observations = carry?.observations.map((o) => ({ ...o })) ?? [];
    this.polls = carry?.polls ?? 0;
    this.messagesSent = carry?.messagesSent ?? 0;
    this.phase = carry ? 'polling' : 'waiting-for-permit';
    this.startedAtMs = carry?.startedAtMs ?? Date.now();
    this.permits = new ProjectPermits(input.projectId, () => {
      if (this.phase === 'creating' || this.phase === 'waiting-for-permit')
        this.phase = this.permits.waitingFor ? 'waiting-for-permit' : 'creating';
      this.publish();
    });
  }

  /** One create or message attempt; a permit handed on ahead of time adds its wait (the activity sleeps until notBefore). */
  private nonIdempotentOptions(permit: PermitUse): ActivityOptions {
    return {
      ...NON_IDEMPOTENT_OPTIONS,
      startToCloseTimeout:
        (this.options.nonIdempotentCallTimeoutMs ?? NON_IDEMPOTENT_TIMEOUT_MS) +
        Math.max(0, (permit.notBeforeMs ?? 0) - Date.now()),
    };
  }

  // ---- surfaces -----------------------------------------------------------------------------------
  status(): AgentStatus {
    const { job } = this;
    return {
      phase: this.phase,
      jobId: job?.id ?? null,
      status: job?.status ?? null,
      prLink: job?.prLink ?? null,
      polls: this.polls,
      lastPollAt: this.lastPollAt,
      nextPollAt: this.nextPollAt,
      waitingFor: this.permits.waitingFor,
    };
  }

  setPhase(phase: AgentStatus['phase']): void {
    this.phase = phase;
    this.publish();
  }

  publish(): void {
    const { job, polls, lastPollAt, nextPollAt } = this;
    // A blank line after the heading, or the Web UI renders the list as one paragraph.
    const lines = [`**Agent job** for project \`${this.input.projectId}\` — ${this.phase}`, ''];
    if (job) {
      lines.push(`- Job: \`${job.id}\`, status **${job.status}**`);
      lines.push(
        `- Pull request: ${job.prLink ? `[${job.prLink}](${job.prLink})` : isTerminal(job.status) ? 'none (no changes)' : 'not yet'}`,
      );
    }
    lines.push(
      `- Polls: ${polls}${lastPollAt ? `, last ${lastPollAt}` : ''}${nextPollAt && !isTerminal(job?.status ?? null) ? `, next ${nextPollAt}` : ''}`,
    );
    if (this.messagesSent > 0) lines.push(`- Follow-up messages: ${this.messagesSent}`);
    if (this.permits.waitingFor) lines.push(`- Waiting for ${this.permits.waitingFor}`);
    setCurrentDetails(lines.join('\n'));

    if (job && (job.status !== this.shownStatus || job.prLink !== this.shownPrLink)) {
      const updates: Parameters<typeof upsertSearchAttributes>[0] = [
        { key: SearchAttr.jobId, value: job.id },
        { key: SearchAttr.jobStatus, value: job.status },
      ];
      if (job.prLink) updates.push({ key: SearchAttr.prLink, value: job.prLink });
      upsertSearchAttributes(updates);
      this.shownStatus = job.status;
      this.shownPrLink = job.prLink;
    }
  }

  /** `seenAtMs`: when the API gave this answer, if known (a create's answer reaches the workflow later). */
  private observe(next: AgentJob, restart: boolean, seenAtMs?: number): void {
    this.job = next;
    const now = Date.now();
    const observation = { atMs: Math.min(now, seenAtMs ?? now), status: next.status };
    this.observations = restart ? [observation] : recentObservations([...this.observations, observation]);
    this.publish();
  }

  // ---- handlers (registered first: update-with-start delivers jobId in the first task) ------------
  registerHandlers(): void {
    setHandler(agentStatusQuery, () => this.status());
    setHandler(jobIdUpdate, async () => {
      await condition(() => this.job !== null || this.startFailure !== null);
      if (this.job) return this.job.id;
      throw this.startFailure!;
    });
    setHandler(sendMessageUpdate, (prompt) => this.sendMessage(prompt), {
      validator: (prompt: unknown) => {
        const problems = validatePrompt(prompt);
        if (problems.length > 0) throw invalidInput(problems);
        if (this.finishing || this.startFailure) throw new Error('the agent job has already finished');
      },
    });
  }

  private async sendMessage(prompt: string): Promise<AgentJob> {
    const { input } = this;
    await condition(() => (this.job !== null && !this.messaging) || this.startFailure !== null);
    if (!this.job) throw this.startFailure!;
    if (this.finishing)
      throw ApplicationFailure.create({
        type: WorkflowFailure.invalidInput,
        message: `agent job ${this.job.id} has already finished`,
        nonRetryable: true,
      });
    this.messaging = true;
    const previousPhase = this.phase;
    try {
      const jobId = this.job.id;
      const attemptedAt = new Date().toISOString();
      this.messagesSent += 1;
      let refreshed: AgentJob;
      try {
        refreshed = await this.permits.run(`${this.info.runId}:message:${this.messagesSent}`, (permit) => {
          this.setPhase('messaging');
          return callOnceSafely(() =>
            api.sendAgentMessage.executeWithOptions(
              { ...this.nonIdempotentOptions(permit), summary: `send follow-up message to agent job ${jobId}` },
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
      this.generation += 1;
      this.observe(refreshed, true);
      this.wake = true;
      return refreshed;
    } finally {
      this.messaging = false;
      this.setPhase(
        previousPhase === 'messaging' || previousPhase === 'waiting-for-permit' ? 'polling' : previousPhase,
      );
    }
  }

  async fail(failure: ApplicationFailure): Promise<never> {
    this.startFailure = this.startFailure ?? failure;
    this.setPhase('failed');
    await condition(allHandlersFinished);
    await this.permits.delivered();
    throw failure;
  }

  // ---- start --------------------------------------------------------------------------------------
  /** Creates the job under a permit; a failure fails the workflow (OutcomeUnknown when it may have been created). */
  async create(): Promise<void> {
    const { input } = this;
    this.publish();
    let attemptedAt = new Date().toISOString();
    let answeredAtMs: number | undefined;
    try {
      const created = await this.permits.run(`${this.info.runId}:create`, async (permit) => {
        this.setPhase('creating');
        attemptedAt = new Date().toISOString();
        const settled = await callOnceSafely(() =>
          api.createAgentJob.executeWithOptions(
            { ...this.nonIdempotentOptions(permit), summary: `create agent job for project ${input.projectId}` },
            [{ projectId: input.projectId, prompt: input.prompt, permit }],
          ),
        );
        if (settled.admitted) answeredAtMs = settled.answeredAtMs;
        return settled;
      });
      this.observe(created, true, answeredAtMs);
    } catch (err) {
      if (isCancellation(err)) throw err;
      return this.fail(createFailure(input, err, attemptedAt));
    }
    this.setPhase('polling');
  }

  // ---- poll until terminal ------------------------------------------------------------------------
  async pollUntilTerminal(): Promise<void> {
    const { input, options } = this;
    for (;;) {
      if (this.messaging) await condition(() => !this.messaging);
      if (isTerminal(this.job!.status)) return;

      const maxPolls = options.maxPollsPerRun;
      if (workflowInfo().continueAsNewSuggested || (maxPolls !== undefined && this.pollsThisRun >= maxPolls)) {
        await condition(() => allHandlersFinished() && !this.messaging);
        await this.permits.delivered();
        const next: AgentJobCarry = {
          job: this.job!,
          observations: recentObservations(this.observations),
          polls: this.polls,
          messagesSent: this.messagesSent,
          startedAtMs: this.startedAtMs,
        };
        await continueAsNew<typeof agentJob>(input, { ...options, carry: next });
      }

      // The next poll is due a policy delay after the job was last seen: for a create, when the API
      // answered, not when this workflow got the answer (the activity's completion and the next
      // workflow task take a while under load).
      const now = Date.now();
      const seenAtMs = this.observations.at(-1)?.atMs ?? now; // never later than now: observe() clamps it
      const dueAtMs = seenAtMs + agentPollDelay(this.observations, seenAtMs, options.poll);
      this.nextPollAt = new Date(Math.max(now, dueAtMs)).toISOString();
      this.publish();
      this.wake = false;
      if (dueAtMs > now) await condition(() => this.wake, dueAtMs - now);
      if (this.messaging || this.wake) continue;

      const seen = this.generation;
      const polled = await pollApi.getAgentJob.executeWithOptions(
        {
          startToCloseTimeout: API_OPTIONS.startToCloseTimeout,
          retry: API_OPTIONS.retry,
          summary: `poll agent job ${this.job!.id}`,
        },
        [{ projectId: input.projectId, jobId: this.job!.id }],
      );
      this.polls += 1;
      this.pollsThisRun += 1;
      this.lastPollAt = new Date().toISOString();
      // A message sent while this poll was in flight supersedes its answer.
      if (seen === this.generation && !this.messaging) this.observe(polled, false);
      else this.publish();
    }
  }

  /** The terminal job: the result, or AgentJobFailed. */
  async finish(): Promise<AgentJobResult> {
    const final: AgentJob = this.job!;
    this.nextPollAt = null;
    await this.permits.delivered();
    if (final.status === 'failed') {
      this.setPhase('failed');
      throw ApplicationFailure.create({
        type: WorkflowFailure.agentJobFailed,
        nonRetryable: true,
        message: `agent job ${final.id} of project "${this.input.projectId}" failed`,
        details: [{ jobId: final.id, projectId: this.input.projectId, status: final.status }],
      });
    }
    this.setPhase('done');
    return {
      jobId: final.id,
      status: final.status,
      prLink: final.prLink,
      source: final.source,
      model: final.model,
      createdAt: final.createdAt,
    };
  }
}

/** Why creating the job failed: OutcomeUnknown (it may exist: check before starting again) or the API's reason. */
function createFailure(input: AgentJobInput, err: unknown, attemptedAt: string): ApplicationFailure {
  if (failureType(err) === ApiFailure.outcomeUnknown) {
    return ApplicationFailure.create({
      type: ApiFailure.outcomeUnknown,
      nonRetryable: true,
      message:
        `the outcome of creating the agent job is unknown: the request may have reached the API. Project ` +
        `"${input.projectId}", request id ${input.requestId ? `"${input.requestId}"` : '(none)'}, attempted at ` +
        `${attemptedAt}, prompt starting "${promptPreview(input.prompt)}". It was not retried, to avoid a ` +
        `duplicate job and pull request: check the project's agent jobs and pull requests opened since then ` +
        `before starting it again`,
      cause: err as Error,
    });
  }
  return ApplicationFailure.create({
    type: failureType(err) ?? 'Error',
    nonRetryable: true,
    message: `creating the agent job for project "${input.projectId}" failed: ${(err as Error).message}`,
    cause: err as Error,
  });
}

export async function agentJob(input: AgentJobInput, options: AgentJobOptions = {}): Promise<AgentJobResult> {
  const run = new AgentRun(input, options);
  run.registerHandlers();

  const problems = validateAgentJobInput(input);
  if (problems.length > 0) return run.fail(invalidInput(problems));
  // Starters through src/client.ts set it already: no extra event and visibility write per job then.
  if (run.info.typedSearchAttributes.get(SearchAttr.projectId) !== input.projectId) {
    upsertSearchAttributes([{ key: SearchAttr.projectId, value: input.projectId }]);
  }
  if (!run.job) await run.create();
  else run.publish();

  for (;;) {
    await run.pollUntilTerminal();
    run.finishing = true;
    await condition(allHandlersFinished);
    // A message accepted just before `finishing` may have restarted the job.
    if (isTerminal(run.job!.status)) break;
    run.finishing = false;
  }
  return run.finish();
}
