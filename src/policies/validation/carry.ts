// Carried state: what a run hands to the next when it continues as new (a `carry`; the limiter's
// `carried`), taken only from the workflow's own past and in the shape it writes; why, and when a run
// counts as continued: docs/security.md, "Carried state: only from the workflow's own past". Pure and
// sandbox-safe: the four workflows check at start, the client library refuses a keeper start holding one.
import { bundleKeeperCarry } from '../../shared/bundle-keeper';
import type { Shape } from '../../shared/shapes';
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
export type CarryCheck = Shape<unknown>;

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

/**
 * bundleKeeper's carry shape, after one of an earlier release is decoded (keeper-compat.ts). The other
 * workflows check theirs with the shape their contract declares (agentJobCarry, ...).
 */
export const keeperCarryProblems: CarryCheck = (v, at) => bundleKeeperCarry(decodeFlagsCarry(v), at);
