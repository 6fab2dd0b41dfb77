// Names shared by the worker, the starter, the client library and the workflows: task queue, workflow
// ids, search attributes, and the signal/query/update definitions. No other module spells these out.
import { defineSearchAttributeKey } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { AgentJob } from '../api/types';
import type { SeenLimit } from '../policies/rate-window';

export const DEFAULT_TASK_QUEUE = 'docs-admin';
export const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233';
export const DEFAULT_NAMESPACE = 'default';

/** Workflow type names (the exported function names in src/workflows). */
export const WorkflowType = {
  staticExport: 'staticExport',
  bundleKeeper: 'bundleKeeper',
  agentJob: 'agentJob',
  agentRateLimiter: 'agentRateLimiter',
} as const;

// Workflow ids. Deterministic where a caller needs dedup or attach-to-running.
export const keeperWorkflowId = (domain: string): string => `bundle-keeper:${domain}`;
export const exportWorkflowId = (domain: string, requestId: string): string => `static-export:${domain}:${requestId}`;
export const agentWorkflowId = (projectId: string, requestId: string): string => `agent-job:${projectId}:${requestId}`;
export const rateLimiterWorkflowId = (projectId: string): string => `agent-rate-limiter:${projectId}`;
/**
 * The task queue of every agentRateLimiter workflow, the same for every fleet in a namespace whatever
 * its TEMPORAL_TASK_QUEUE: each worker process serves it beside its own queue, always unversioned (see
 * createLimiterWorker). A project's limiter is one workflow per namespace, so fleets on different task
 * queues (staging and production, or before and after a rename) share it and never exceed the API's
 * limit together, and whichever fleet is up serves it. Renamed from `docs-admin-limiter`, which versioned
 * workers of earlier releases polled and so listed in their deployment version: limiters still there
 * are served once by the worker they fail to answer (as the version that queue routes to) and move here.
 */
export const LIMITER_TASK_QUEUE = 'docs-admin-rate-limiter';

/**
 * Heartbeat timeout of the admin API activities. The server marks a task started when it hands it to
 * a poller; on a loaded cluster a few of those never reached the worker, and waited out their whole
 * start-to-close timeout (60 s) before a retry. With a heartbeat timeout the retry comes after this
 * instead, while the worker keeps every attempt it does run alive (ACTIVITY_KEEP_ALIVE_MS).
 */
export const ACTIVITY_HEARTBEAT_TIMEOUT_MS = 10_000;
/** How often a running activity attempt heartbeats: well inside ACTIVITY_HEARTBEAT_TIMEOUT_MS, and never for one shorter than this. */
export const ACTIVITY_KEEP_ALIVE_MS = 3_000;

/**
 * Task-queue fairness key of a project's agent workflows and activities (the server allows 64 bytes):
 * the project id, or for a longer one a prefix and a hash of the whole id. With fairness enabled on the
 * server, one project's burst does not hold another project's tasks behind it.
 */
export function projectFairnessKey(projectId: string): string {
  if (projectId.length <= 64 && !/[^\x20-\x7e]/.test(projectId)) return projectId;
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193;
  for (let i = 0; i < projectId.length; i++) {
    const c = projectId.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193) >>> 0;
    h2 = Math.imul(h2 ^ c, 0x5bd1e995) >>> 0;
  }
  const prefix = projectId.slice(0, 40).replace(/[^\x20-\x7e]/g, '_');
  return `${prefix}#${h1.toString(16).padStart(8, '0')}${h2.toString(16).padStart(8, '0')}`;
}

/** Custom search attributes, registered by `npm run server` and the test harness. */
export const SearchAttr = {
  domain: defineSearchAttributeKey('DocsDomain', 'KEYWORD'),
  projectId: defineSearchAttributeKey('DocsProjectId', 'KEYWORD'),
  jobId: defineSearchAttributeKey('DocsJobId', 'KEYWORD'),
  jobStatus: defineSearchAttributeKey('DocsJobStatus', 'KEYWORD'),
  prLink: defineSearchAttributeKey('DocsPrLink', 'KEYWORD'),
} as const;

/** name -> Temporal CLI type, for `temporal server start-dev --search-attribute name=Type`. */
export const SEARCH_ATTRIBUTE_REGISTRATION: Record<string, 'Keyword'> = Object.fromEntries(
  Object.values(SearchAttr).map((key) => [key.name, 'Keyword']),
);

// ---- staticExport ----------------------------------------------------------------------------------

export interface StaticExportInput {
  domain: string;
  version?: string;
  paths?: string[];
}

export interface StaticExportResult {
  jobId: string;
  domain: string;
  pageCount: number;
  bundleUrl: string;
  expiresAt: string;
  sizeBytes: number;
}

export type ExportPhase = 'starting' | 'exporting' | 'bundling' | 'done' | 'failed';

export interface ExportStatus {
  phase: ExportPhase;
  jobId: string | null;
  status: string | null;
  progress: number;
  pageCount: number;
  polls: number;
  lastPollAt: string | null;
  nextPollAt: string | null;
}

export const exportStatusQuery = defineQuery<ExportStatus>('status');

// ---- bundleKeeper ------------------------------------------------------------------------------------

export type DeploymentKind = 'cloud' | 'client-hosted' | 'air-gapped';

/** Where a verified bundle link is applied. Exactly one. */
export type SinkConfig =
  | { type: 'file'; path: string }
  | { type: 'webhook'; url: string }
  | { type: 'command'; command: string }
  | { type: 'mirror'; dir: string; urlPrefix: string; /** archives kept for rollback, default 3 */ keep?: number };

export interface KeeperStatus {
  jobId: string | null;
  bundleUrl: string | null;
  expiresAt: string | null;
  version: string | null;
  lastAppliedAt: string | null;
  nextRefreshAt: string | null;
  exportsDone: number;
  refreshesDone: number;
  paused: boolean;
  /** Why the last export/refresh/apply attempt failed (cleared on success). */
  lastError?: string | null;
  /** An export is running right now. */
  exporting?: boolean;
  /** A publish/pin is waiting for the running export to finish. */
  exportWanted?: boolean;
}

/** Features of a self-hosted deployment (docs/contract.md, the self-hosted deployment table); rules in src/policies/validation/deployment.ts. */
export type DeploymentFeature = 'search' | 'assistant' | 'analytics' | 'apiPlayground' | 'staticExport';
export type DeploymentFeatures = Partial<Record<DeploymentFeature, boolean>>;

/** How long before a link expires the keeper refreshes it: `fraction` of the link's lifetime, at least `minMs`. */
export interface RefreshMargin {
  /** Default 0.1 (10 % of the lifetime). */
  fraction?: number;
  /** Default 60 000 (one minute). */
  minMs?: number;
}

/** The bundle a keeper last applied. Plain JSON (carried across continue-as-new). */
export interface AppliedBundle {
  jobId: string;
  /** The URL the deployment was configured with (the presigned link, or the mirror's stable URL). */
  appliedUrl: string;
  /** When appliedUrl stops working; null when it does not expire (mirror). */
  appliedExpiresAt: string | null;
  /** Workflow time (ms) at which the applied link was generated (or received from the export). */
  linkIssuedAtMs: number;
  sizeBytes: number;
  version: string | null;
  appliedAt: string;
  /** Workflow time (ms) of the next refresh; null when the applied URL does not expire. */
  refreshAtMs: number | null;
  /** Consecutive failed refreshes of this job's link (drives the back-off). */
  refreshFailures: number;
}

/** An exported job whose bundle is still to be verified and applied. Plain JSON. */
export interface PendingBundle {
  jobId: string;
  version: string | null;
  /** The link the export returned, used for the first attempt; later attempts generate a fresh one. */
  bundle: { bundleUrl: string; expiresAt: string; sizeBytes: number } | null;
  failures: number;
  /** Workflow time (ms) of the next attempt; null = now. */
  retryAtMs: number | null;
}

/** What a bundleKeeper run hands to the next one when it continues as new. Plain JSON. */
export interface KeeperCarriedState {
  current: AppliedBundle | null;
  pending: PendingBundle | null;
  /** Pinned export version (null: latest published). */
  version: string | null;
  exportsDone: number;
  refreshesDone: number;
  /** A publish or pin arrived that no export has served yet. */
  exportWanted: boolean;
  paused: boolean;
  /** Consecutive failed exports, and the workflow time (ms) before which no new export starts. */
  exportFailures: number;
  exportRetryAtMs: number | null;
  lastError: string | null;
  /** Continue-as-new generations so far (for the Web UI and tests). */
  generation: number;
}

export interface BundleKeeperInput {
  domain: string;
  sink: SinkConfig;
  /** Default client-hosted. */
  kind?: DeploymentKind;
  /** Pins staticExport.version (default: the latest published). */
  version?: string;
  features?: DeploymentFeatures;
  refreshMargin?: RefreshMargin;
  /**
   * Continue as new after this many refresh/export cycles even when the server does not suggest it.
   * Default: only when workflowInfo().continueAsNewSuggested (tests set a small number).
   */
  continueAsNewAfterCycles?: number;
  /** State from the previous run (set by the keeper itself when it continues as new). */
  carried?: KeeperCarriedState;
}

/** What a staticExport run hands to the next one when it continues as new. Plain JSON. */
export interface StaticExportCarry {
  jobId: string;
  /** The most recent poll observations (what the polling policy needs), oldest first. */
  observations: { atMs: number; status: string; progress?: number; pageCount?: number }[];
  polls: number;
  startedAtMs: number;
}

/** Optional second argument of staticExport (the public input stays `{domain, version?, paths?}`). */
export interface StaticExportOptions {
  /**
   * Continue as new after this many polls in one run even when the server does not suggest it.
   * Default: only when workflowInfo().continueAsNewSuggested (tests set a small number).
   */
  maxPollsPerRun?: number;
  /** State from the previous run (set by the workflow itself when it continues as new). */
  carry?: StaticExportCarry;
}

export const publishSignal = defineSignal('publish');
export const pinVersionSignal = defineSignal<[version: string | null]>('pin');
export const pauseSignal = defineSignal('pause');
export const resumeSignal = defineSignal('resume');
export const keeperStatusQuery = defineQuery<KeeperStatus>('status');

// ---- agentJob ------------------------------------------------------------------------------------------

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
/** `DocsJobStatus` of a job that waits for an operator (SPEC 3: list them with DocsJobStatus='needs-operator'). */
export const NEEDS_OPERATOR = 'needs-operator';

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

// ---- agentRateLimiter ---------------------------------------------------------------------------------

export interface PermitRequest {
  /** Workflow id that receives permitGrantedSignal. */
  requesterWorkflowId: string;
  /** Distinguishes several requests from one workflow (create, then each message). */
  requestKey: string;
}

export const requestPermitSignal = defineSignal<[PermitRequest]>('requestPermit');
/** A grant; with notBeforeMs (epoch ms) the permit is handed on ahead of time: call no earlier than that. */
/** The third argument, the permit's use-by time (epoch ms), came later: a grant without it has no deadline. */
export const permitGrantedSignal =
  defineSignal<[requestKey: string, notBeforeMs?: number, useByMs?: number]>('permitGranted');

/** The limiter's answer to one request of admitPermitsUpdate. */
export interface PermitAdmission {
  requestKey: string;
  /** true: granted now (no signal follows); false: queued, permitGrantedSignal follows when a slot frees. */
  granted: boolean;
  /** When granted: the call must be made by then (epoch ms), or asked for again (rate-limit.ts permitUseByMs). */
  useByMs?: number;
  /** When queued: requests ahead of this one. */
  position?: number;
  /** When queued: when the permit can be expected (epoch ms; a hint for the status, not a promise). */
  expectedAtMs?: number;
}

/**
 * Who asks, sent with every admitPermitsUpdate: the asking worker's AGENT_RATE_LIMIT (so a changed
 * limit reaches a running limiter) and the limiter task queue it serves (a limiter found running on
 * another queue moves there at once, by continue-as-new).
 */
export interface LimiterRequestContext {
  limit: number;
  windowMs: number;
  taskQueue: string;
}
/**
 * Spare permits a worker process asks for with its requests, to answer its next asks itself without a
 * round trip to the limiter. Granted only while nothing is queued and half the window stays free
 * (src/policies/rate-window.ts sparePermits); each is a grant to `holder` (no workflow: nothing is
 * ever signalled to it) that the process reports used, or gives back with permitsReleasedSignal.
 */
export interface SparePermitsAsk {
  holder: string;
  /** One request key per spare wanted, unique to the holder. */
  keys: string[];
}
/**
 * Several requests answered at once (update-with-start from the activity about to make the call, so a
 * permit that is free now costs no signal and no workflow task on the requester). FIFO order kept. The
 * answers to the requests come first, in order, then one per spare granted. A limiter from before
 * spares ignores the third argument and grants none.
 */
export const admitPermitsUpdate = defineUpdate<
  PermitAdmission[],
  [PermitRequest[], LimiterRequestContext?, SparePermitsAsk?]
>('admitPermits');
/** Spare permits given back unused: their slots free at once. */
export const permitsReleasedSignal = defineSignal<[PermitRequest[]]>('permitsReleased');

/** The status-poll history the agent polling policy needs (see src/policies/polling.ts). Plain JSON. */
export interface AgentObservation {
  atMs: number;
  status: string;
}

/** What an agentJob run hands to the next one when it continues as new. Plain JSON. */
export interface AgentJobCarry {
  job: AgentJob;
  /** The most recent observations of the current polling phase, oldest first. */
  observations: AgentObservation[];
  polls: number;
  messagesSent: number;
  startedAtMs: number;
}

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
  /** State from the previous run (set by the workflow itself when it continues as new). */
  carry?: AgentJobCarry;
}

/** A permit the limiter granted: when, to whom (for de-duplication of retried requests), and until when it holds its slot. Plain JSON. */
export interface PermitGrant extends PermitRequest {
  atMs: number;
  /** Handed on ahead of time: the call must not be made before this (the previous holder's slot frees then). */
  notBeforeMs?: number;
  /** This grant's slot went on to a queued request ahead of time: it no longer counts, kept only to recognise repeats. */
  handedOver?: boolean;
  /** Lease end until the use is reported, then usedAt + window + margin. */
  freeAtMs: number;
  /** Workflow time by which the permitted call had been made (reported by the requester). */
  usedAtMs?: number;
}

export interface PermitUse extends PermitRequest {
  /** An upper bound of when the API received the call (reported after the call returned or failed). */
  usedAtMs: number;
}

/** The requester tells the limiter when it used a permit, so the slot frees one window after the real call. */
export const permitUsedSignal = defineSignal<[PermitUse]>('permitUsed');
/** Several use reports in one signal (coalesced per project by each worker process). */
export const permitsUsedSignal = defineSignal<[PermitUse[]]>('permitsUsed');

/** What an agentRateLimiter run hands to the next one when it continues as new. Plain JSON. */
export interface RateLimiterState {
  /** Grants that still occupy a slot of the window, oldest first. */
  grants: PermitGrant[];
  /** Requests waiting for a permit, FIFO. */
  queue: PermitRequest[];
  /** The limits workers asked with lately (src/policies/rate-window.ts effectiveLimit picks the one applied). */
  seenLimits?: SeenLimit[];
}

export interface AgentRateLimiterInput {
  projectId: string;
  /** Permits per window (AGENT_RATE_LIMIT of the worker that started the limiter). */
  limit: number;
  windowMs: number;
  /** Extra time each grant keeps its slot (default: src/policies/rate-window.ts defaultMarginMs). */
  marginMs?: number;
  /**
   * Continue as new past this many history events (default 500: a new worker replays it quickly), and
   * once quiet for 5 s past a fifth of them.
   */
  maxHistoryEvents?: number;
  /** Set by the limiter itself when it continues as new. */
  carried?: RateLimiterState;
}

export interface RateLimiterStatus {
  projectId: string;
  limit: number;
  windowMs: number;
  /** Task queue this limiter runs on (LIMITER_TASK_QUEUE once moved). */
  taskQueue: string;
  queued: number;
  /** Grants still occupying a slot. */
  inWindow: number;
  granted: number;
  nextFreeAt: string | null;
}

export const rateLimiterStatusQuery = defineQuery<RateLimiterStatus>('status');
