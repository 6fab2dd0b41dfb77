// The worker's side of the permit protocol: asks a project's agentRateLimiter for permits by
// update-with-start (coalesced per project), reports their use, and never waits on it for long: an ask
// with no answer in time says why (src/activities/limiter-diagnosis.ts). A limiter whose workflow task
// keeps failing on a payload encrypted with a key no worker that took it holds (a run of an older
// release, whose payloads were encrypted, served now by a fleet with other keys) is replaced: its state
// is at most a window of grants, which the API's Retry-After covers, while it would hold every job of
// the project until a worker with that key came back.
import { Context, log } from '@temporalio/activity';
import { type Client, WithStartWorkflowOperation } from '@temporalio/client';
import type { RateLimit } from '../config';
import { inSpan } from '../observability/tracing';
import {
  type AgentRateLimiterInput,
  type LimiterAnswer,
  type PermitAdmission,
  type PermitRequest,
  type PermitUse,
  admitPermitsUpdate,
  permitOf,
  permitsUsedSignal,
  rateLimiterWorkflowId,
} from '../shared/rate-limiter';
import { WorkflowFailure, firstApplicationFailure } from '../shared/failures';
import { SearchAttr } from '../shared/search-attributes';
import { WorkflowType } from '../shared/workflow-types';
import { projectFairnessKey } from '../shared/fairness';
import { diagnoseLimiter } from './limiter-diagnosis';
import { KeyedBatcher } from './keyed-batcher';

/** Task priority of the limiter workflows (1 = highest; the server's default for everything else is 3). */
export const LIMITER_PRIORITY_KEY = 1;

/**
 * The history budget of the limiters this worker starts (the workflow's own is 500): a burst of a few
 * hundred jobs then fits in one run, as a run ending mid-burst hands nothing over while it waits for
 * its grant signals. In the input, not the code, so every build replays every run alike.
 */
export const LIMITER_HISTORY_EVENTS = 2_000;

/** How long one ask may wait for the limiter's answer before the caller is told it did not come. */
export const LIMITER_ANSWER_TIMEOUT_MS = 10_000;

/** The span of one ask for a permit (its attribute docs_admin.limiter.answer: granted, queued, unanswered). */
export const LIMITER_SPAN = 'AgentRateLimiterAsk';

/** The ask's answer from the limiter's for `request`: a grant is its permit, all its times kept. */
export function answerOf(request: PermitRequest, admission: PermitAdmission | undefined): LimiterAnswer {
  if (admission?.granted) return { kind: 'granted', ...permitOf({ ...admission, requestKey: request.requestKey })! };
  return { kind: 'queued', position: admission?.position, expectedAtMs: admission?.expectedAtMs };
}

/**
 * The limiter refused the ask: it enforces another window than this worker's AGENT_RATE_LIMIT (it
 * started with it, docs/operations.md). Told as it is: no diagnosis or replacement would change that.
 */
function refusal(projectId: string, err: unknown): LimiterAnswer | undefined {
  const failure = firstApplicationFailure(err);
  if (failure?.type !== WorkflowFailure.rateWindowMismatch) return undefined;
  log.warn('the agent rate limiter refused the ask', { projectId, reason: failure.message });
  return { kind: 'unanswered', reason: failure.message };
}

export interface LimiterClientOptions {
  temporal: Client;
  /** The limiter task queue this worker serves (LIMITER_TASK_QUEUE); default: the asking activity's own. */
  taskQueue?: string;
  /** This worker's AGENT_RATE_LIMIT: starts a limiter, and goes with every ask (a limiter enforcing another refuses it). */
  rateLimit: RateLimit;
  answerTimeoutMs?: number;
}

export class LimiterClient {
  private readonly answerTimeoutMs: number;
  /** Keyed by [limiter task queue, project id] as JSON. */
  private readonly admissions: KeyedBatcher<PermitRequest, PermitAdmission>;
  private readonly uses: KeyedBatcher<PermitUse>;

  constructor(private readonly options: LimiterClientOptions) {
    this.answerTimeoutMs = options.answerTimeoutMs ?? LIMITER_ANSWER_TIMEOUT_MS;
    this.admissions = new KeyedBatcher((key, requests) => {
      const [taskQueue, projectId] = JSON.parse(key) as [string, string];
      return this.admit(projectId, taskQueue, requests);
    });
    this.uses = new KeyedBatcher((projectId, uses) =>
      options.temporal.workflow.getHandle(rateLimiterWorkflowId(projectId)).signal(permitsUsedSignal, uses),
    );
  }

  /**
   * Asks for one permit within the answer timeout; returns early when the activity is cancelled (a
   * worker shutting down never waits on the limiter). The limiter knows a repeated request by its key.
   */
  ask(projectId: string, request: PermitRequest): Promise<LimiterAnswer> {
    // A span per ask: in a job's trace, the time its create waited on the project's limiter, and the answer.
    return inSpan(LIMITER_SPAN, { 'docs_admin.project_id': projectId }, async (set) => {
      const answer = await this.askOnce(projectId, request);
      set({ 'docs_admin.limiter.answer': answer.kind });
      return answer;
    });
  }

  private async askOnce(projectId: string, request: PermitRequest): Promise<LimiterAnswer> {
    const taskQueue = this.options.taskQueue ?? Context.current().info.taskQueue;
    let replaced = false;
    for (;;) {
      let admission: PermitAdmission | undefined;
      try {
        const asked = this.admissions.add(JSON.stringify([taskQueue, projectId]), request);
        admission = await Promise.race([asked, Context.current().cancelled]);
      } catch (err) {
        if (Context.current().cancellationSignal.aborted) throw err;
        const refused = refusal(projectId, err);
        if (refused) return refused;
        const { answer, replacedNow } = await this.unanswered(projectId, taskQueue, err, !replaced);
        // A fresh limiter took the undecodable one's place: ask it at once, once.
        if (!replacedNow) return answer;
        replaced = true;
        continue;
      }
      return answerOf(request, admission);
    }
  }

  /** Reports a permit's use in the background: lost, it only keeps the slot until its lease ends. */
  reportUse(projectId: string, use: PermitUse): void {
    void this.uses
      .add(projectId, use)
      .catch((err: unknown) =>
        log.warn('could not report a permit use to the limiter', { projectId, error: String(err) }),
      );
  }

  /** Asks the limiter for these requests, starting it if it is not running. */
  private async admit(projectId: string, taskQueue: string, requests: PermitRequest[]): Promise<PermitAdmission[]> {
    const { temporal } = this.options;
    const { limit, windowMs } = this.options.rateLimit;
    const input: AgentRateLimiterInput = { projectId, limit, windowMs, maxHistoryEvents: LIMITER_HISTORY_EVENTS };
    const startWorkflowOperation = new WithStartWorkflowOperation(WorkflowType.agentRateLimiter, {
      workflowId: rateLimiterWorkflowId(projectId),
      workflowIdConflictPolicy: 'USE_EXISTING',
      taskQueue,
      args: [input],
      staticSummary: `Agent rate limiter for project ${projectId} (${limit} per ${windowMs} ms)`,
      // Every permit of the project passes through this one workflow: its tasks go first.
      priority: { priorityKey: LIMITER_PRIORITY_KEY, fairnessKey: projectFairnessKey(projectId) },
      // Filterable with its project's jobs in the Web UI (DocsProjectId = "...").
      typedSearchAttributes: [{ key: SearchAttr.projectId, value: projectId }],
    });
    return temporal.withDeadline(Date.now() + this.answerTimeoutMs, () =>
      temporal.workflow.executeUpdateWithStart(admitPermitsUpdate, {
        args: [requests, { limit, windowMs }],
        startWorkflowOperation,
      }),
    );
  }

  /** Why the limiter did not answer, as far as the server can tell; replaces it when undecodable and `mayReplace`. */
  private async unanswered(
    projectId: string,
    taskQueue: string,
    err: unknown,
    mayReplace: boolean,
  ): Promise<{ answer: LimiterAnswer; replacedNow: boolean }> {
    const workflowId = rateLimiterWorkflowId(projectId);
    let reason = `${workflowId} did not answer within ${Math.round(this.answerTimeoutMs / 1000)} s`;
    let replacedNow = false;
    try {
      const { temporal } = this.options;
      const diagnosis = await temporal.withDeadline(Date.now() + this.answerTimeoutMs, () =>
        diagnoseLimiter(temporal, workflowId, taskQueue),
      );
      reason += ` ${diagnosis.text}`;
      if (diagnosis.undecodableRunId && mayReplace)
        replacedNow = await this.replace(workflowId, diagnosis.undecodableRunId);
    } catch (describeErr) {
      reason += ` (${err instanceof Error ? err.message : String(err)}; describe: ${describeErr instanceof Error ? describeErr.message : String(describeErr)})`;
    }
    log.warn('the agent rate limiter did not answer in time', { projectId, reason, replacedNow });
    return { answer: { kind: 'unanswered', reason }, replacedNow };
  }

  /** Terminates the undecodable run `runId` (not a newer one), so that the next ask starts a fresh limiter. */
  private async replace(workflowId: string, runId: string): Promise<boolean> {
    const why =
      'its history holds payloads encrypted with a key the workers serving it lack; a fresh limiter takes over';
    try {
      await this.options.temporal.workflow.getHandle(workflowId, runId).terminate(why);
      log.warn('replaced an undecodable agent rate limiter', { workflowId, runId });
      return true;
    } catch (err) {
      log.warn('could not replace an undecodable agent rate limiter', { workflowId, runId, error: String(err) });
      return false;
    }
  }
}
