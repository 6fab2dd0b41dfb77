// The agentRateLimiter workflow's contract: its id and task queue, input, status query, and the permit
// protocol's messages (requests, grants, admissions, use reports) and continue-as-new carry.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { flag, id, listOf, optional, record, time, type Shaped } from './shapes';

/** One limiter per project and namespace. */
export const RATE_LIMITER_ID_PREFIX = 'agent-rate-limiter:';
export const rateLimiterWorkflowId = (projectId: string): string => `${RATE_LIMITER_ID_PREFIX}${projectId}`;
/**
 * The task queue of every agentRateLimiter workflow, whatever the fleet's TEMPORAL_TASK_QUEUE: every
 * worker process serves it, always unversioned (createLimiterWorker), so fleets on different queues
 * share a project's limiter and whichever fleet is up serves it.
 */
export const LIMITER_TASK_QUEUE = 'docs-admin-rate-limiter';

export interface AgentRateLimiterInput {
  projectId: string;
  /**
   * Permits per window (AGENT_RATE_LIMIT of the worker that started the limiter), fixed for the
   * limiter's life; bounds in src/policies/validation/rate-limiter.ts.
   */
  limit: number;
  windowMs: number;
  /** Extra time each grant keeps its slot (default, and the least accepted: src/policies/rate-window.ts defaultMarginMs). */
  marginMs?: number;
  /**
   * Continue as new past this many history events (default 500; the workers' asks start it with
   * 2,000), and once quiet for 5 s past a fifth of them, at most 100. A new worker replays it before
   * it answers.
   */
  maxHistoryEvents?: number;
  /**
   * Set by the limiter itself when it continues as new; a start that holds it is refused (InvalidInput).
   * Named `carried`, not `carry` as the other workflows' carries: every release that serves
   * the shared limiter queue reads this field, so it keeps its name.
   */
  carried?: RateLimiterCarry;
}

export interface RateLimiterStatus {
  projectId: string;
  limit: number;
  windowMs: number;
  /** Task queue this limiter runs on (LIMITER_TASK_QUEUE, or an older release's). */
  taskQueue: string;
  queued: number;
  /** Grants still occupying a slot, as of `asOf`. */
  inWindow: number;
  granted: number;
  nextFreeAt: string | null;
  /**
   * The limiter's clock for these figures: its last workflow task (a query does not move it on). A quiet
   * limiter keeps its last figures until its next task, at most a window after `windowEmptyAt`. This and
   * `windowEmptyAt` are absent from limiters of earlier releases.
   */
  asOf?: string;
  /** When the last slot counted in `inWindow` frees (null when none): from then on the window is empty. */
  windowEmptyAt?: string | null;
}

export const rateLimiterStatusQuery = defineQuery<RateLimiterStatus>('status');

const permitRequestFields = {
  /** Workflow id that receives permitGrantedSignal. */
  requesterWorkflowId: id,
  /** Distinguishes several requests from one workflow (create, then each message). */
  requestKey: id,
};
const permitRequest = record(permitRequestFields);
export type PermitRequest = Shaped<typeof permitRequest>;

/**
 * A permit: the limiter's grant of one request, one shape from the grant to the use report. It is the
 * limiter's answer to an ask (with `granted: true`, PermitAdmission), the permitGranted signal, the
 * ask's result (with `kind: 'granted'`, LimiterAnswer) and the create or message activity's input.
 */
export interface Permit {
  requestKey: string;
  /** Handed on ahead of time: call no earlier than this (epoch ms; the previous holder's slot frees then). */
  notBeforeMs?: number;
  /** Call by this (epoch ms), or ask again (rate-window.ts permitUseByMs). */
  useByMs?: number;
}

/** A permit as received (untrusted): the request key and finite times, nothing else (e.g. no `granted: true`). */
export function permitOf(from: { requestKey?: unknown; notBeforeMs?: unknown; useByMs?: unknown }): Permit | null {
  if (typeof from.requestKey !== 'string') return null;
  const finite = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
  return {
    requestKey: from.requestKey,
    ...(finite(from.notBeforeMs) ? { notBeforeMs: from.notBeforeMs } : {}),
    ...(finite(from.useByMs) ? { useByMs: from.useByMs } : {}),
  };
}

/**
 * A permit granted by signal, spread over the signal's arguments: jobs of every release served by the
 * shared limiter queue read it so (grantSignalArgs writes it, the job's handler reads it with permitOf).
 */
export const permitGrantedSignal =
  defineSignal<[requestKey: string, notBeforeMs?: number, useByMs?: number]>('permitGranted');
export const grantSignalArgs = (p: Permit): [string, number?, number?] => [p.requestKey, p.notBeforeMs, p.useByMs];

/**
 * The limiter's answer to one ask of admitPermitsUpdate: granted, the permit; queued (a permitGranted
 * signal follows when a slot frees), the ask's place and when the permit can be expected (epoch ms; a
 * hint for the status, not a promise).
 */
export interface PermitAdmission extends Permit {
  granted: boolean;
  position?: number;
  expectedAtMs?: number;
}

/**
 * The askPermit local activity's result (held in job histories): the permit, the ask's place in the
 * queue (a grant signal follows), or no answer in time and why.
 */
export type LimiterAnswer =
  | ({ kind: 'granted' } & Permit)
  | { kind: 'queued'; position?: number; expectedAtMs?: number }
  | { kind: 'unanswered'; reason: string };

/**
 * Who asks, sent with every admitPermitsUpdate: its AGENT_RATE_LIMIT. A limiter enforces the window it
 * started with and refuses an ask naming another (RateWindowMismatch, naming both).
 */
export interface LimiterRequestContext {
  limit: number;
  windowMs: number;
}
/**
 * Several requests answered at once, one answer per request in order, FIFO order kept. Sent by
 * update-with-start from the askPermit local activity, inside the job's own workflow task (coalesced
 * per project by each worker), so a permit that is free now costs no signal and no second workflow task
 * on the requester.
 */
export const admitPermitsUpdate = defineUpdate<PermitAdmission[], [PermitRequest[], LimiterRequestContext?]>(
  'admitPermits',
);

/** A use report: the requester tells the limiter when it used a permit, so the slot frees one window after the real call. */
export interface PermitUse extends PermitRequest {
  /** An upper bound of when the API received the call (reported after the call returned or failed). */
  usedAtMs: number;
}

export const permitUsedSignal = defineSignal<[PermitUse]>('permitUsed');
/** Several use reports in one signal (coalesced per project by each worker process). */
export const permitsUsedSignal = defineSignal<[PermitUse[]]>('permitsUsed');

/** A permit the limiter granted: when, to whom (for de-duplication of retried requests), and until when it holds its slot. Plain JSON. */
const permitGrant = record({
  ...permitRequestFields,
  atMs: time,
  /**
   * When the slot frees (epoch ms), with one of two meanings: until the use is reported, the end of
   * the grant's lease (granted, or notBefore, + two windows + margin: rate-window.ts grantedSlotFreeAt),
   * from which its use-by time follows; once reported, one window after the use (usedAt + window +
   * margin: usedSlotFreeAt), no use-by time any more. usedAtMs says which.
   */
  freeAtMs: time,
  /** As the Permit's: the grant was handed on ahead of time, its call no earlier than this. */
  notBeforeMs: optional(time),
  /**
   * Set on the old grant that handed its slot over: the limiter gave it, ahead of time, to a queued
   * request (whose grant has notBeforeMs = this one's freeAtMs). It no longer counts; kept only to
   * recognise repeats of its request until its freeAtMs.
   */
  handedOver: optional(flag),
  /**
   * When the permitted call had been made at the latest, as reported: the calling worker's clock when
   * the call returned, or the job's workflow time when it reports for the activity (permits.ts reportedBy).
   */
  usedAtMs: optional(time),
});
export type PermitGrant = Shaped<typeof permitGrant>;

/**
 * What an agentRateLimiter run hands to the next one when it continues as new. Plain JSON (a previous
 * release's also held `seenLimits`: ignored).
 */
export const rateLimiterCarry = record({
  /** Grants that still occupy a slot of the window, oldest first. */
  grants: listOf(permitGrant),
  /** Requests waiting for a permit, FIFO. */
  queue: listOf(permitRequest),
});
export type RateLimiterCarry = Shaped<typeof rateLimiterCarry>;
