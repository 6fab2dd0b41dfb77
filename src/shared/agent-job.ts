// The agentJob workflow's contract: its id, input, options, result, status query, updates (the
// caller's and the operator's for a parked job) and continue-as-new carry.
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import { type AgentJob, agentJobRecord } from './agent-job-record';
import { observations } from './observation';
import { count, record, time, type Shaped } from './shapes';

export type { AgentJob } from './agent-job-record';

/** Deterministic per request, so a retried start attaches to the running job. */
export const agentWorkflowId = (projectId: string, requestId: string): string => `agent-job:${projectId}:${requestId}`;

export interface AgentJobInput {
  projectId: string;
  prompt: string;
  requestId?: string;
  /**
   * How long a job whose create or message outcome is unknown waits for an operator (`resolve`,
   * `resend`, `abandon`) before it ends with OutcomeUnknown. Default DEFAULT_PARKED_TIMEOUT_MS (7 days).
   */
  parkedTimeoutMs?: number;
}

/** A parked job waits this long for an operator by default. */
export const DEFAULT_PARKED_TIMEOUT_MS = 7 * 24 * 60 * 60 * 1000;
/** `DocsJobStatus` of a job that waits for an operator (docs/contract.md: list them with DocsJobStatus='needs-operator'). */
export const NEEDS_OPERATOR = 'needs-operator';

/** Optional second argument of agentJob (the public input stays `{projectId, prompt, requestId?}`). */
export interface AgentJobOptions {
  /** Overrides of the agent polling policy's defaults (tests poll fast; the defaults suit real jobs). */
  poll?: { floorMs?: number; fraction?: number; capMs?: number; jitter?: number };
  /**
   * Continue as new after this many polls in one run even when the server does not suggest it.
   * Default: only when workflowInfo().continueAsNewSuggested (tests set a small number).
   */
  maxPollsPerRun?: number;
  /**
   * Start-to-close of one create or message attempt (default 60 s). An attempt that runs past it
   * (its worker died mid-request) is never retried: it ends as OutcomeUnknown.
   */
  nonIdempotentCallTimeoutMs?: number;
  /** State from the previous run (set by the workflow itself when it continues as new; refused in a start). */
  carry?: AgentJobCarry;
}

export interface AgentJobResult {
  jobId: string;
  status: string;
  prLink: string | null;
  source: AgentJob['source'];
  model: string | null;
  createdAt: string;
}

export interface AgentStatus {
  phase: 'waiting-for-permit' | 'creating' | 'polling' | 'messaging' | typeof NEEDS_OPERATOR | 'done' | 'failed';
  jobId: string | null;
  status: string | null;
  prLink: string | null;
  polls: number;
  lastPollAt: string | null;
  nextPollAt: string | null;
  /** What the job is waiting for before it can go on (a permit, a limiter that does not answer), or null. */
  waitingFor?: string | null;
  /** Set while the job waits for an operator: what happened and what to check. */
  parked?: ParkedCall | null;
}

/** A create or message whose outcome is unknown: what a person needs to settle it. Plain JSON, no prompt. */
export interface ParkedCall {
  operation: 'create' | 'message';
  projectId: string;
  /** The job the message was for (message only). */
  jobId: string | null;
  /** The caller's request id, if any (it is part of the workflow id). */
  requestId?: string;
  /** The call was made within [from, to]: the job, if any, was created (or messaged) then. */
  from: string;
  to: string;
  /** What to look up in the platform's dashboard before choosing resolve, resend or abandon. */
  check: string;
  /** When the job ends with OutcomeUnknown if nobody settles it. */
  deadline: string;
}

export const agentStatusQuery = defineQuery<AgentStatus>('status');
/** Resolves with the created job id as soon as it exists (pair with update-with-start). */
export const jobIdUpdate = defineUpdate<string>('jobId');
/** Sends a follow-up prompt to the agent and returns the refreshed job. */
export const sendMessageUpdate = defineUpdate<AgentJob, [prompt: string]>('sendMessage');
/** Operator: the parked call did reach the API; `jobId` is the job it created (or the job messaged). */
export const resolveUpdate = defineUpdate<AgentJob, [{ jobId: string }]>('resolve');
/** Operator: the parked call did not reach the API; make it again (under a new permit). */
export const resendUpdate = defineUpdate<void>('resend');
/** Operator: give up; the job ends with OutcomeUnknown. */
export const abandonUpdate = defineUpdate<void, [{ reason?: string }]>('abandon');

/** What an agentJob run hands to the next one when it continues as new. Plain JSON. */
export const agentJobCarry = record({
  job: agentJobRecord,
  /** The most recent observations of the current polling phase, oldest first. */
  observations,
  polls: count,
  messagesSent: count,
  startedAtMs: time,
});
export type AgentJobCarry = Shaped<typeof agentJobCarry>;
