// One catalogue of the failure types this project raises, as ApplicationFailure `type`s: the admin
// API's codes (src/api/errors.ts; mapped to failures once, in src/activities/api-call.ts), the
// activities' own, and the workflows'. And one reader of a failure's cause chain. Sandbox-safe:
// workflows, activities, the client, the CLI and tests all import it.
import { ActivityFailure, ApplicationFailure, ChildWorkflowFailure, TemporalFailure } from '@temporalio/common';
import type { ApplicationFailureOptions } from '@temporalio/common';

/** The admin API's error codes (AdminApiError.code), each an ApplicationFailure type. */
export const ApiFailure = {
  invalidRequest: 'InvalidRequest',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  /** 403 because static export needs an Enterprise plan. Also raised by staticExport itself. */
  planRequired: 'PlanRequired',
  notFound: 'NotFound',
  conflict: 'Conflict',
  rateLimited: 'RateLimited',
  serverError: 'ServerError',
  networkError: 'NetworkError',
  timeout: 'Timeout',
  malformedResponse: 'MalformedResponse',
  /** A non-idempotent call may or may not have taken effect: never retried. Also raised by agentJob. */
  outcomeUnknown: 'OutcomeUnknown',
} as const;

/** Failure types of the activities besides the API's codes. */
export const ActivityFailureType = {
  /** The bundle's content is wrong (size, not gzip, corrupt). Not retried on the same link. */
  bundleInvalid: 'BundleInvalid',
  /** The bundle link could not be read (network, 5xx; 403/404/410 = expired or revoked, not retried). */
  bundleUnavailable: 'BundleUnavailable',
  /** The bundle link's host, or the address it resolves to, is not one the worker fetches from. Not retried. */
  bundleRefused: 'BundleRefused',
  /** A sink could not apply the bundle. */
  sinkFailed: 'SinkFailed',
} as const;

/** Failure types of the workflows (besides the API codes they pass on: PlanRequired, OutcomeUnknown). */
export const WorkflowFailure = {
  /** The input can never be valid (any workflow, and an update such as sendMessage after the end). */
  invalidInput: 'InvalidInput',
  /** staticExport: the export job ended `failed`. */
  exportFailed: 'ExportFailed',
  /** agentJob: the agent job ended `failed`. */
  agentJobFailed: 'AgentJobFailed',
  /** bundleKeeper: the deployment kind forbids the features or sink asked for. */
  deploymentKindConflict: 'DeploymentKindConflict',
  /** agentRateLimiter: an ask named another window than the limiter enforces (the admitPermits validator). */
  rateWindowMismatch: 'RateWindowMismatch',
} as const;

export type ApiFailureType = (typeof ApiFailure)[keyof typeof ApiFailure];

/** A failure no retry mends, of `type` (`more`: details, cause). */
export function nonRetryable(
  type: string,
  message: string,
  more: Pick<ApplicationFailureOptions, 'details' | 'cause'> = {},
): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: true, ...more });
}

/** An input that can never be valid: `invalid <what> input: <problems>`. */
export function invalidInput(what: string, problems: readonly string[]): ApplicationFailure {
  return nonRetryable(WorkflowFailure.invalidInput, `invalid ${what} input: ${problems.join('; ')}`);
}

// ---- the cause chain ---------------------------------------------------------------------------------

/** A failure and its causes, outermost first; `cause`s that are not Errors end it. */
export function causeChain(err: unknown, maxDepth = 10): Error[] {
  const chain: Error[] = [];
  for (let current = err; current instanceof Error && chain.length < maxDepth; current = current.cause)
    chain.push(current);
  return chain;
}

/** The first ApplicationFailure anywhere in the chain (through WorkflowFailedError, timeouts, ...). */
export function firstApplicationFailure(err: unknown): ApplicationFailure | undefined {
  return causeChain(err).find((link): link is ApplicationFailure => link instanceof ApplicationFailure);
}

/**
 * What a workflow decides on: the ApplicationFailure an activity or child workflow failed with (or the
 * error itself), looking only through ActivityFailure and ChildWorkflowFailure wrappers, so a timeout
 * or cancellation is never mistaken for the failure of an earlier attempt.
 */
export function rootApplicationFailure(err: unknown): ApplicationFailure | undefined {
  for (const link of causeChain(err)) {
    if (link instanceof ApplicationFailure) return link;
    if (!(link instanceof ActivityFailure || link instanceof ChildWorkflowFailure)) return undefined;
  }
  return undefined;
}

/** Type of rootApplicationFailure, e.g. PlanRequired or ExportFailed. */
export function failureType(err: unknown): string | undefined {
  return rootApplicationFailure(err)?.type ?? undefined;
}

/** A one-line reason for a failure, from rootApplicationFailure when there is one (workflow details). */
export function failureMessage(err: unknown): string {
  const root = rootApplicationFailure(err);
  if (root) return `${root.type ?? 'Error'}: ${root.message}`;
  return err instanceof Error ? err.message : String(err);
}

/**
 * A failure's `type: message` on one line, for people (CLI, status reports): the first
 * ApplicationFailure of the chain, else the innermost failure's `name: message` (a timeout,
 * cancellation or termination), else the innermost error's message.
 */
export function failureReason(err: unknown): string {
  let reason = String(err);
  for (const link of causeChain(err)) {
    if (link instanceof ApplicationFailure) {
      reason = `${link.type ?? 'Error'}: ${link.message}`;
      break;
    }
    if (!(link.cause instanceof Error)) {
      reason = link instanceof TemporalFailure ? `${link.name}: ${link.message}` : link.message;
      break;
    }
  }
  return reason.split('\n')[0] as string;
}
