// agentJob: one agent job from prompt to pull request. Validates the input (no API call for a bad
// one), takes a permit from the project's rate limiter, creates the job, polls it durably until it is
// completed, archived or failed, and surfaces the job id and the PR link as early as they exist: the
// `jobId` update, the `status` query, the Web UI's current details, and search attributes.
//
// Follow-up messages arrive as the `sendMessage` update (validated, rate-limited) and take a mutex in
// turn; a poll starts only while the mutex is free, and a message that starts during a poll
// supersedes the poll's answer. A create or message whose outcome is unknown is never retried on its
// own: the job parks (src/workflows/parking.ts; docs/design.md, "No duplicate agent jobs").
import {
  type ApplicationFailure,
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
  type LocalActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { Permit } from '../shared/rate-limiter';
import { AGENT_TERMINAL_STATUSES, type AgentJob } from '../api/types';
import { ACTIVITY_HEARTBEAT_TIMEOUT_MS } from '../shared/heartbeat';
import {
  DEFAULT_PARKED_TIMEOUT_MS,
  NEEDS_OPERATOR,
  type AgentJobInput,
  type AgentJobOptions,
  type AgentJobResult,
  type AgentStatus,
  type ParkedCall,
  agentStatusQuery,
  jobIdUpdate,
  sendMessageUpdate,
} from '../shared/agent-job';
import { SearchAttr } from '../shared/search-attributes';
import { agentOptionsProblems, validateAgentJobInput, validatePrompt } from '../policies/validation/agent';
import { ApiFailure, WorkflowFailure, failureType, invalidInput, nonRetryable } from '../shared/failures';
import { ProjectPermits } from './permits';
import { type Observation, agentPollDelay, recentObservations } from '../policies/polling';
import { callOnceSafely } from './send-once';
import { Parking, parkedDetails, parkedFailure } from './parking';
import { Mutex } from './mutex';
import { reservedWorkflowIdProblems } from './reserved-ids';
import {
  jobParksUnknownOutcomes,
  jobSendsMessagesInTurn,
  unparkedCreateFailure,
  unparkedMessageFailure,
} from './earlier-runs';

/** Admin API calls: Temporal owns retries; 429 honours Retry-After through nextRetryDelay. */
const API_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '60s',
  heartbeatTimeout: ACTIVITY_HEARTBEAT_TIMEOUT_MS,
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '60s' },
};
/**
 * Create and message are not idempotent: one attempt per activity (src/workflows/send-once.ts decides
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
const POLL_OPTIONS: LocalActivityOptions = {
  startToCloseTimeout: API_OPTIONS.startToCloseTimeout,
  retry: API_OPTIONS.retry,
};
const pollApi = proxyLocalActivities<Activities>(POLL_OPTIONS);

const isTerminal = (status: string | null): boolean =>
  status !== null && (AGENT_TERMINAL_STATUSES as readonly string[]).includes(status);

/**
 * Where the job is in its life, which is what the handlers go by and what the status shows (its
 * `phase` follows from it): `jobId` waits while it is `starting` and answers from any other stage; a
 * message waits while it is `starting`, fails when the job was never created, and is refused once the
 * job is `finishing`.
 */
type Stage =
  | { name: 'starting' }
  | { name: 'not-created'; failure: ApplicationFailure }
  | { name: 'running'; job: AgentJob }
  | { name: 'finishing'; job: AgentJob }
  | { name: 'done'; job: AgentJob }
  | { name: 'failed'; job: AgentJob; failure: ApplicationFailure };

/** The job's id, or why it will never have one; only for a stage past `starting`. */
function jobIdOf(stage: Stage): string {
  if ('job' in stage) return stage.job.id;
  if (stage.name === 'not-created') throw stage.failure;
  throw new Error('agentJob: the job is still being created');
}

/**
 * One agent job run: its stage, what it shows (the `status` query, current details, search
 * attributes), the `jobId` and `sendMessage` updates, and the create, poll and finish steps. The
 * workflow function below is the lifecycle.
 */
class AgentRun {
  readonly info = workflowInfo();
  stage: Stage;
  private observations: Observation[];
  private polls: number;
  private pollsThisRun = 0;
  private messagesSent: number;
  private lastPollAt: string | null = null;
  private nextPollAt: string | null = null;
  /** Held by a message while it is sent: messages go one at a time, and no poll starts meanwhile. */
  private readonly messages = new Mutex();
  /** Messages answered in this run: a poll or a wait for one that began before the latest is stale. */
  private replies = 0;
  private readonly startedAtMs: number;
  /** Every create and message runs under a permit of the project's rate limiter. */
  readonly permits: ProjectPermits;
  private shownStatus: string | null = null;
  private shownPrLink: string | null = null;
  /** A create or message whose outcome is unknown waits here for an operator. */
  readonly parking: Parking;
  /** A parked message that was abandoned (or ran out of time): the workflow ends with it. */
  abandoned: ApplicationFailure | null = null;

  constructor(
    readonly input: AgentJobInput,
    readonly options: AgentJobOptions,
  ) {
    const { carry } = options;
    this.stage = carry ? { name: 'running', job: carry.job } : { name: 'starting' };
    this.observations = carry?.observations.map((o) => ({ ...o })) ?? [];
    this.polls = carry?.polls ?? 0;
    this.messagesSent = carry?.messagesSent ?? 0;
    this.startedAtMs = carry?.startedAtMs ?? Date.now();
    this.permits = new ProjectPermits(input.projectId, () => this.show());
    this.parking = new Parking(input.parkedTimeoutMs ?? DEFAULT_PARKED_TIMEOUT_MS, () => this.show());
  }

  /** The job once it exists. */
  get job(): AgentJob | null {
    return 'job' in this.stage ? this.stage.job : null;
  }

  /** One create or message attempt; a permit handed on ahead of time adds its wait (the activity sleeps until notBefore). */
  private nonIdempotentOptions(permit: Permit): ActivityOptions {
    return {
      ...NON_IDEMPOTENT_OPTIONS,
      startToCloseTimeout:
        (this.options.nonIdempotentCallTimeoutMs ?? NON_IDEMPOTENT_TIMEOUT_MS) +
        Math.max(0, (permit.notBeforeMs ?? 0) - Date.now()),
    };
  }

  // ---- surfaces -----------------------------------------------------------------------------------
  /** What the run is doing, from its stage, its parking, its permits and its message lock. */
  get phase(): AgentStatus['phase'] {
    const { stage } = this;
    if (this.parking.parked) return NEEDS_OPERATOR;
    switch (stage.name) {
      case 'starting':
        return this.permits.waitingFor ? 'waiting-for-permit' : 'creating';
      case 'running':
      case 'finishing':
        if (!this.messages.locked) return 'polling';
        return this.permits.waitingFor ? 'waiting-for-permit' : 'messaging';
      case 'done':
        return 'done';
      case 'not-created':
      case 'failed':
        return 'failed';
    }
  }

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
      parked: this.parking.parked,
    };
  }

  /** Refreshes the Web UI's current details and, when they changed, the search attributes. */
  show(): void {
    setCurrentDetails(this.details());
    // DocsJobStatus: the job's status, or needs-operator while parked (before or after the job exists).
    const { job } = this;
    const status = this.parking.parked ? NEEDS_OPERATOR : (job?.status ?? null);
    const prLink = job?.prLink ?? null;
    if (status !== null && (status !== this.shownStatus || prLink !== this.shownPrLink)) {
      const updates: Parameters<typeof upsertSearchAttributes>[0] = [];
      if (job) updates.push({ key: SearchAttr.jobId, value: job.id });
      updates.push({ key: SearchAttr.jobStatus, value: status });
      if (prLink) updates.push({ key: SearchAttr.prLink, value: prLink });
      upsertSearchAttributes(updates);
      this.shownStatus = status;
      this.shownPrLink = prLink;
    }
  }

  private details(): string {
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
    if (this.parking.parked) lines.push(...parkedDetails(this.parking.parked, this.info.workflowId));
    return lines.join('\n');
  }

  /** `seenAtMs`: when the API gave this answer, if known (a create's answer reaches the workflow later). */
  private observe(job: AgentJob, restart: boolean, seenAtMs?: number): void {
    const { stage } = this;
    this.stage = 'job' in stage ? { ...stage, job } : { name: 'running', job };
    const now = Date.now();
    const observation = { atMs: Math.min(now, seenAtMs ?? now), status: job.status };
    this.observations = restart ? [observation] : recentObservations([...this.observations, observation]);
    this.show();
  }

  // ---- handlers (registered first: update-with-start delivers jobId in the first task) ------------
  registerHandlers(): void {
    setHandler(agentStatusQuery, () => this.status());
    setHandler(jobIdUpdate, async () => {
      await condition(() => this.stage.name !== 'starting');
      return jobIdOf(this.stage);
    });
    setHandler(sendMessageUpdate, (prompt) => this.sendMessage(prompt), {
      validator: (prompt: unknown) => {
        const problems = validatePrompt(prompt);
        if (problems.length > 0) throw invalidInput('agent job', problems);
        const { name } = this.stage;
        if (name === 'finishing' || name === 'done' || name === 'failed' || name === 'not-created')
          throw new Error('the agent job has already finished');
        if (this.parking.parked) throw new Error('the agent job waits for an operator (resolve, resend or abandon)');
      },
    });
    this.parking.register((jobId) =>
      api.getAgentJob.executeWithOptions(
        {
          ...API_OPTIONS,
          retry: { ...API_OPTIONS.retry, maximumAttempts: 5 },
          summary: `check agent job ${jobId} (resolve)`,
        },
        [{ projectId: this.input.projectId, jobId }],
      ),
    );
  }

  /** The sendMessage update: once the job exists, one message at a time (the mutex), in arrival order. */
  private async sendMessage(prompt: string): Promise<AgentJob> {
    await condition(() => this.stage.name !== 'starting');
    const inTurn = jobSendsMessagesInTurn();
    const send = async (): Promise<AgentJob> => {
      const { stage } = this;
      if (!('job' in stage)) throw stage.name === 'not-created' ? stage.failure : new Error('no agent job yet');
      if (stage.name === 'finishing')
        throw nonRetryable(WorkflowFailure.invalidInput, `agent job ${stage.job.id} has already finished`);
      return this.message(stage.job.id, prompt);
    };
    return inTurn ? this.messages.runExclusive(send) : this.messages.runWhenFree(send);
  }

  /** Sends one message (holding the mutex) and restarts the polling from its answer. */
  private async message(jobId: string, prompt: string): Promise<AgentJob> {
    this.messagesSent += 1;
    try {
      const refreshed = await this.messageOnce(jobId, prompt);
      this.replies += 1;
      this.observe(refreshed, true);
      return refreshed;
    } finally {
      // Shown as the message ends, sent or not (a parked one no longer needs an operator).
      this.show();
    }
  }

  /** One message (sent again when an operator says the first did not arrive); parks when its outcome is unknown. */
  private async messageOnce(jobId: string, prompt: string): Promise<AgentJob> {
    const { input } = this;
    for (let resends = 0; ; resends++) {
      const attemptedAt = new Date().toISOString();
      const key = `${this.info.runId}:message:${this.messagesSent}${resends > 0 ? `:resend-${resends}` : ''}`;
      try {
        return await this.permits.run(key, (permit) => {
          this.show();
          return callOnceSafely(() =>
            api.sendAgentMessage.executeWithOptions(
              { ...this.nonIdempotentOptions(permit), summary: `send follow-up message to agent job ${jobId}` },
              [{ projectId: input.projectId, jobId, prompt, permit }],
            ),
          );
        });
      } catch (err) {
        if (failureType(err) !== ApiFailure.outcomeUnknown) throw err;
        if (!jobParksUnknownOutcomes()) throw unparkedMessageFailure(input, jobId, prompt, attemptedAt, err);
        const to = new Date().toISOString();
        const call = { operation: 'message' as const, projectId: input.projectId, jobId, from: attemptedAt, to };
        const { settlement, parked } = await this.parking.park(call);
        if (settlement.kind === 'resend') continue;
        if (settlement.kind === 'resolved') return settlement.job;
        this.abandoned = parkedFailure(parked, settlement, err as Error);
        throw this.abandoned;
      }
    }
  }

  /** Ends the run with `failure` once every handler has finished (the first failure is what jobId answers). */
  async fail(failure: ApplicationFailure): Promise<never> {
    const { stage } = this;
    if (stage.name === 'starting') this.stage = { name: 'not-created', failure };
    else if (stage.name === 'running' || stage.name === 'finishing')
      this.stage = { name: 'failed', job: stage.job, failure };
    this.show();
    await condition(allHandlersFinished);
    await this.permits.delivered();
    throw failure;
  }

  // ---- start --------------------------------------------------------------------------------------
  /**
   * Creates the job under a permit. A failure fails the workflow; an unknown outcome parks the job until
   * an operator resolves it (the job exists), resends it (it does not) or abandons it.
   */
  async create(): Promise<void> {
    const { input } = this;
    this.show();
    for (let resends = 0; ; resends++) {
      const attempt = { at: new Date().toISOString() };
      try {
        const key = `${this.info.runId}:create${resends > 0 ? `:resend-${resends}` : ''}`;
        const { job, answeredAtMs } = await this.createOnce(key, attempt);
        this.observe(job, true, answeredAtMs);
        break;
      } catch (err) {
        if (isCancellation(err)) throw err;
        if (failureType(err) !== ApiFailure.outcomeUnknown) return this.fail(createFailure(input, err));
        if (!jobParksUnknownOutcomes()) return this.fail(unparkedCreateFailure(input, err, attempt.at));
        const { settlement, parked } = await this.parking.park(parkedCreate(input, attempt.at));
        if (settlement.kind === 'resend') continue;
        if (settlement.kind === 'resolved') {
          this.observe(settlement.job, true);
          break;
        }
        return this.fail(parkedFailure(parked, settlement, err as Error));
      }
    }
    this.show();
  }

  /** One create under a permit (`attempt.at`: when the call was made, once the permit came). */
  private async createOnce(key: string, attempt: { at: string }): Promise<{ job: AgentJob; answeredAtMs?: number }> {
    const { input } = this;
    let answeredAtMs: number | undefined;
    const job = await this.permits.run(key, async (permit) => {
      this.show();
      attempt.at = new Date().toISOString();
      const result = await callOnceSafely(() =>
        api.createAgentJob.executeWithOptions(
          { ...this.nonIdempotentOptions(permit), summary: `create agent job for project ${input.projectId}` },
          [{ projectId: input.projectId, prompt: input.prompt, permit }],
        ),
      );
      if (result.admitted) answeredAtMs = result.answeredAtMs;
      return result;
    });
    return { job, ...(answeredAtMs !== undefined ? { answeredAtMs } : {}) };
  }

  // ---- poll until terminal ------------------------------------------------------------------------
  /**
   * Polls until the job is terminal (or a parked message was abandoned). A message holds the mutex
   * while it is sent: no poll starts meanwhile, and its answer restarts the plan (`replies`).
   */
  async pollUntilTerminal(): Promise<void> {
    for (;;) {
      if (this.messages.locked) await this.messages.released();
      const { stage } = this;
      if (stage.name !== 'running' || this.abandoned || isTerminal(stage.job.status)) return;
      if (this.continueAsNewDue()) await this.continueAsNew(stage.job);

      const replies = this.replies;
      const dueInMs = this.planNextPoll();
      if (dueInMs > 0) await condition(() => this.replies !== replies, dueInMs);
      if (this.messageSince(replies)) continue;

      const polled = await this.pollOnce(stage.job.id);
      this.polls += 1;
      this.pollsThisRun += 1;
      this.lastPollAt = new Date().toISOString();
      // A message that started while this poll was in flight supersedes its answer.
      if (this.messageSince(replies)) this.show();
      else this.observe(polled, false);
    }
  }

  /** A message is being sent, or one was answered since `replies`: a poll planned before is stale. */
  private messageSince(replies: number): boolean {
    return this.messages.locked || this.replies !== replies;
  }

  private continueAsNewDue(): boolean {
    const maxPolls = this.options.maxPollsPerRun;
    return workflowInfo().continueAsNewSuggested || (maxPolls !== undefined && this.pollsThisRun >= maxPolls);
  }

  /** Hands the job on to a new run once no handler is running (a message may change the job meanwhile). */
  private async continueAsNew(job: AgentJob): Promise<never> {
    const quiet = () => allHandlersFinished() && !this.messages.locked;
    // Handlers first, then the reports in flight: the run ends at this point of its task.
    await condition(quiet);
    await this.permits.delivered(quiet);
    const carry = {
      job: this.job ?? job,
      observations: recentObservations(this.observations),
      polls: this.polls,
      messagesSent: this.messagesSent,
      startedAtMs: this.startedAtMs,
    };
    return continueAsNew<typeof agentJob>(this.input, { ...this.options, carry });
  }

  /**
   * When the next poll is due, in ms from now (shown as nextPollAt): a policy delay after the job was
   * last seen; for a create, when the API answered, not when this workflow got the answer (the
   * activity's completion and the next workflow task take a while under load).
   */
  private planNextPoll(): number {
    const now = Date.now();
    const seenAtMs = this.observations.at(-1)?.atMs ?? now; // never later than now: observe() clamps it
    const dueAtMs = seenAtMs + agentPollDelay(this.observations, seenAtMs, this.options.poll);
    this.nextPollAt = new Date(Math.max(now, dueAtMs)).toISOString();
    this.show();
    return dueAtMs - now;
  }

  private pollOnce(jobId: string): Promise<AgentJob> {
    return pollApi.getAgentJob.executeWithOptions({ ...POLL_OPTIONS, summary: `poll agent job ${jobId}` }, [
      { projectId: this.input.projectId, jobId },
    ]);
  }

  // ---- finish -------------------------------------------------------------------------------------
  /**
   * The job is terminal: refuse new messages and let running handlers finish. A message accepted just
   * before may have restarted the job; then the run goes back to polling (null).
   */
  async finishing(): Promise<AgentJob | null> {
    const { stage } = this;
    if (stage.name !== 'running') throw new Error(`agentJob: cannot finish from stage ${stage.name}`);
    this.stage = { name: 'finishing', job: stage.job };
    await condition(allHandlersFinished);
    const job = this.job;
    if (job && isTerminal(job.status)) return job;
    if (job) this.stage = { name: 'running', job };
    return null;
  }

  /** The terminal job: the result, or AgentJobFailed. */
  async finish(final: AgentJob): Promise<AgentJobResult> {
    this.nextPollAt = null;
    await this.permits.delivered();
    if (final.status === 'failed') {
      const failure = nonRetryable(
        WorkflowFailure.agentJobFailed,
        `agent job ${final.id} of project "${this.input.projectId}" failed`,
        { details: [{ jobId: final.id, projectId: this.input.projectId, status: final.status }] },
      );
      this.stage = { name: 'failed', job: final, failure };
      this.show();
      throw failure;
    }
    this.stage = { name: 'done', job: final };
    this.show();
    const { id: jobId, status, prLink, source, model, createdAt } = final;
    return { jobId, status, prLink, source, model, createdAt };
  }
}

/** The parking record of a create whose outcome is unknown (made between `from` and now). */
function parkedCreate(input: AgentJobInput, from: string): Omit<ParkedCall, 'deadline' | 'check'> {
  return {
    operation: 'create',
    projectId: input.projectId,
    jobId: null,
    ...(input.requestId ? { requestId: input.requestId } : {}),
    from,
    to: new Date().toISOString(),
  };
}

/** Why creating the job failed: the API's reason. */
function createFailure(input: AgentJobInput, err: unknown): ApplicationFailure {
  return nonRetryable(
    failureType(err) ?? 'Error',
    `creating the agent job for project "${input.projectId}" failed: ${(err as Error).message}`,
    { cause: err as Error },
  );
}

/** The lifecycle: validate, create (unless carried over), poll until terminal, finish. */
export async function agentJob(input: AgentJobInput, options: AgentJobOptions = {}): Promise<AgentJobResult> {
  const problems = [
    ...validateAgentJobInput(input),
    ...agentOptionsProblems(options, workflowInfo()),
    ...reservedWorkflowIdProblems(),
  ];
  // A refused start takes nothing from its options (a carry there would be a job it never created).
  const run = new AgentRun(input, problems.length > 0 ? {} : options);
  run.registerHandlers();
  if (problems.length > 0) return run.fail(invalidInput('agent job', problems));
  // Starters through src/client.ts set it already: no extra event and visibility write per job then.
  if (run.info.typedSearchAttributes.get(SearchAttr.projectId) !== input.projectId) {
    upsertSearchAttributes([{ key: SearchAttr.projectId, value: input.projectId }]);
  }
  if (run.stage.name === 'starting') await run.create();
  else run.show();

  for (;;) {
    await run.pollUntilTerminal();
    if (run.abandoned) return run.fail(run.abandoned);
    const final = await run.finishing();
    if (final) return run.finish(final);
  }
}
