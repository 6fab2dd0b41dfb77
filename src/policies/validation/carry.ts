// Carried state: what a run hands to the next when it continues as new (a `carry`; the limiter's
// `carried`). It travels in the next run's input, where anyone who starts the workflow by type name could
// put one as well: a keeper told that its sink is resolved and a bundle is pending would verify and apply
// a link of the starter's choosing. So a run takes a carry only when the server says it continued from an
// earlier run (continuedFromExecutionRunId), as its first attempt and not as a cron run (a retry or a cron
// run repeats its starter's input, and a starter can make either happen), and only in the shape the
// workflow writes. Pure and sandbox-safe: the four workflows check at start, the client library refuses a
// carry in a start.
import { SINK_NAME_FORM, SINK_TYPES } from '../../shared/bundle-keeper';
import { decodeFlagsCarry } from './keeper-compat';

/** How a run began, as workflowInfo() tells it. */
export interface RunOrigin {
  continuedFromExecutionRunId?: string;
  attempt: number;
  cronSchedule?: string;
}

/** Why this run may not take carried state from its input, or null when it continued from its own past. */
export function carryOriginProblem(origin: RunOrigin): string | null {
  if (!origin.continuedFromExecutionRunId) return 'this run did not continue from an earlier one';
  if (origin.attempt !== 1) return `this run is retry attempt ${origin.attempt}, which repeats its starter's input`;
  if (origin.cronSchedule) return "this run is a cron run, which repeats its starter's input";
  return null;
}

/** Checks one value at a path (`carry.pending.bundle`); returns what is wrong, naming the path, never the value. */
export type CarryCheck = (value: unknown, at: string) => string[];

/**
 * Every problem with the carried state of a run's input (`carries`: field name to value, undefined when
 * absent, so `carry: null` counts as given): none without one; else whether this run may take one at
 * all, then its shape.
 */
export function carriedStateProblems(origin: RunOrigin, carries: Record<string, unknown>, shape: CarryCheck): string[] {
  const given = Object.keys(carries).filter((field) => carries[field] !== undefined);
  if (given.length === 0) return [];
  const refused = carryOriginProblem(origin);
  if (refused)
    return [`${given.join(' and ')} is set only by the workflow itself when it continues as new (${refused})`];
  return given.flatMap((field) => shape(carries[field], field));
}

/** For starters (the client library, Schedules): a start holds no carried state. */
export function startCarryProblems(input: unknown, fields: readonly string[]): string[] {
  if (typeof input !== 'object' || input === null) return [];
  const record = input as Record<string, unknown>;
  return fields
    .filter((field) => record[field] !== undefined)
    .map((field) => `${field} is set only by the workflow itself when it continues as new: leave it out of a start`);
}

// ---- the checks -----------------------------------------------------------------------------------

/** Temporal's default limit on workflow ids; ids from the API and request keys fit well within it. */
const MAX_ID_LENGTH = 1000;
/** Polling carries at most 20 observations (recentObservations); room for older releases. */
const MAX_OBSERVATIONS = 1000;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const must = (at: string, what: string): string[] => [`${at} must be ${what}`];

const text: CarryCheck = (v, at) => (typeof v === 'string' ? [] : must(at, 'a string'));
const id: CarryCheck = (v, at) =>
  typeof v === 'string' && v.trim() !== '' && v.length <= MAX_ID_LENGTH
    ? []
    : must(at, `a non-empty string of at most ${MAX_ID_LENGTH} characters`);
/** A link something will fetch: http(s) only. */
const link: CarryCheck = (v, at) =>
  typeof v === 'string' && /^https?:\/\/[^\s/?#]+/i.test(v) ? [] : must(at, 'an http(s) URL');
/** Epoch or workflow-time milliseconds (fractions happen: a refresh time is a fraction of a lifetime). */
const time: CarryCheck = (v, at) => (typeof v === 'number' && Number.isFinite(v) ? [] : must(at, 'a finite number'));
const count: CarryCheck = (v, at) =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0 ? [] : must(at, 'a whole number >= 0');
const flag: CarryCheck = (v, at) => (typeof v === 'boolean' ? [] : must(at, 'true or false'));
const nullable =
  (check: CarryCheck): CarryCheck =>
  (v, at) =>
    v === null ? [] : check(v, at);
/** Fields a release added after carries without them were written. */
const optional =
  (check: CarryCheck): CarryCheck =>
  (v, at) =>
    v === undefined ? [] : check(v, at);
const listOf =
  (check: CarryCheck, max = Number.POSITIVE_INFINITY): CarryCheck =>
  (v, at) =>
    Array.isArray(v) && v.length <= max
      ? v.flatMap((item, i) => check(item, `${at}[${i}]`))
      : must(at, Number.isFinite(max) ? `a list of at most ${max}` : 'a list');
const oneOf =
  (values: readonly string[]): CarryCheck =>
  (v, at) =>
    typeof v === 'string' && values.includes(v) ? [] : must(at, `one of ${values.join(', ')}`);
/** An object with these fields; others (written by a later release) are ignored, as the workflows do. */
const record =
  (fields: Record<string, CarryCheck>): CarryCheck =>
  (v, at) =>
    isRecord(v)
      ? Object.entries(fields).flatMap(([name, check]) => check(v[name], `${at}.${name}`))
      : must(at, 'an object');

const observations = listOf(
  record({ atMs: time, status: text, progress: optional(time), pageCount: optional(time) }),
  MAX_OBSERVATIONS,
);

/** staticExport's StaticExportCarry. */
export const exportCarryProblems: CarryCheck = record({ jobId: id, observations, polls: count, startedAtMs: time });

/** agentJob's AgentJobCarry; the job as the API client reads it (src/api/schemas.ts). */
export const agentCarryProblems: CarryCheck = record({
  job: record({
    id,
    status: text,
    source: record({ repository: nullable(text), ref: nullable(text) }),
    model: nullable(text),
    prLink: nullable(text),
    createdAt: text,
    archivedAt: nullable(text),
  }),
  observations,
  polls: count,
  messagesSent: count,
  startedAtMs: time,
});

const permitRequest = { requesterWorkflowId: id, requestKey: id };

/** agentRateLimiter's RateLimiterCarry (a previous release's also held `seenLimits`: ignored). */
export const limiterCarryProblems: CarryCheck = record({
  grants: listOf(
    record({
      ...permitRequest,
      atMs: time,
      freeAtMs: time,
      notBeforeMs: optional(time),
      handedOver: optional(flag),
      usedAtMs: optional(time),
    }),
  ),
  queue: listOf(record(permitRequest)),
});

/** One of several object shapes, told apart by their `state`. */
const variants =
  (shapes: Record<string, Record<string, CarryCheck>>): CarryCheck =>
  (v, at) => {
    const state = isRecord(v) ? v.state : undefined;
    if (typeof state !== 'string' || !Object.hasOwn(shapes, state))
      return must(`${at}.state`, `one of ${Object.keys(shapes).join(', ')}`);
    return record(shapes[state]!)(v, at);
  };

const commit = record({
  sha: text,
  ref: nullable(text),
  message: nullable(text),
  pullRequest: nullable(record({ number: count, url: text })),
  agentWorkflowId: nullable(text),
  requestedAtMs: time,
});

const publishing = record({
  wantedSinceMs: nullable(time),
  wantedShas: listOf(text),
  round: nullable(
    record({
      statusId: id,
      startedAtMs: time,
      requestedAtMs: time,
      coveredShas: listOf(text),
      observations,
      nextPollAtMs: time,
      failedPolls: count,
      sha: nullable(text),
      status: text,
    }),
  ),
  lastUpdate: nullable(
    record({ statusId: nullable(text), status: text, sha: nullable(text), endedAtMs: time, error: nullable(text) }),
  ),
  pendingSinceMs: nullable(time),
  deliveries: listOf(text),
  builtShas: listOf(text),
  pullRequests: listOf(record({ sha: text, number: count, url: text, agentWorkflowId: nullable(text) })),
  updatesDone: count,
  updatesFailed: count,
});

const sinkName: CarryCheck = (v, at) =>
  typeof v === 'string' && SINK_NAME_FORM.test(v) ? [] : must(at, 'a sink name');

/**
 * bundleKeeper's BundleKeeperCarry (one of an earlier release decoded first: keeper-compat.ts): what it
 * applied, is about to apply and owes an export, and its sink as the worker answered.
 */
export const keeperCarryProblems: CarryCheck = (v, at) => keeperCarry(decodeFlagsCarry(v), at);
const keeperCarry = record({
  current: nullable(
    record({
      jobId: id,
      appliedUrl: text,
      appliedExpiresAt: nullable(text),
      linkIssuedAtMs: time,
      sizeBytes: count,
      version: nullable(text),
      appliedAt: text,
      refreshAtMs: nullable(time),
      refreshFailures: count,
      commit: optional(nullable(commit)),
    }),
  ),
  pending: nullable(
    record({
      jobId: id,
      version: nullable(text),
      bundle: nullable(record({ bundleUrl: link, expiresAt: text, sizeBytes: count })),
      failures: count,
      retryAtMs: nullable(time),
      commit: optional(nullable(commit)),
    }),
  ),
  version: nullable(text),
  exportsDone: count,
  refreshesDone: count,
  paused: flag,
  lastError: nullable(text),
  generation: count,
  export: variants({
    idle: {},
    wanted: { commit: nullable(commit), retryAtMs: nullable(time), failures: count },
  }),
  sink: variants({
    resolving: {},
    resolved: { name: sinkName, type: oneOf(SINK_TYPES) },
    refused: { reason: text, checks: count, retryAtMs: time },
  }),
  publishing: optional(publishing),
});
