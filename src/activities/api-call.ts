// The one place where admin API errors become Temporal failures. Every activity that calls the API
// goes through callAdminApi, which hands the call an AbortSignal tied to activity cancellation.
//
// 429 without Retry-After: no nextRetryDelay is set, so the activity's own retry policy (exponential
// backoff, which Temporal already jitters across workers by scheduling) decides. We do not invent a
// delay here: the per-project rate limiter workflow keeps agent calls under the budget, so a bare 429
// is rare, and a second backoff formula next to the retry policy would make delays hard to reason about.
import { Context } from '@temporalio/activity';
import { ApplicationFailure, TemporalFailure } from '@temporalio/common';
import { AdminApiError } from '../api/errors';
import { redact } from '../api/credentials';

/** Non-secret facts about a failed call, attached as the failure's details. */
export interface AdminApiFailureDetails {
  operation: string;
  code: string;
  status: number | null;
  retryAfterMs: number | null;
}

const NEVER_ABORTED = new AbortController().signal;

/** Inside an activity, its cancellation signal; outside (a direct call), one that never aborts. */
export function activitySignal(): AbortSignal {
  try {
    return Context.current().cancellationSignal;
  } catch {
    // Outside an activity (scripts, unit tests): nothing cancels the call but its own timeouts.
    return NEVER_ABORTED;
  }
}

/**
 * Runs `fn` with the activity's cancellation signal and converts any AdminApiError into an
 * ApplicationFailure (toApplicationFailure). Cancellation and failures that are already Temporal
 * failures pass through unchanged; other errors (bugs) pass through too and Temporal retries them.
 */
export async function callAdminApi<T>(operation: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const signal = activitySignal();
  try {
    return await fn(signal);
  } catch (err) {
    if (err instanceof AdminApiError) throw toApplicationFailure(err, operation);
    throw err;
  }
}

/**
 * AdminApiError -> ApplicationFailure: type = code, nonRetryable = !retryable, nextRetryDelay =
 * Retry-After. Message and cause chain are redacted copies: nothing here can carry the API key or an
 * Authorization header into workflow history.
 */
export function toApplicationFailure(err: AdminApiError, operation?: string): ApplicationFailure {
  const message = redact(
    operation && !err.message.startsWith(`${operation}:`) ? `${operation}: ${err.message}` : err.message,
  );
  const details: AdminApiFailureDetails = {
    operation: operation ?? 'unknown',
    code: err.code,
    status: err.status ?? null,
    retryAfterMs: err.retryAfterMs ?? null,
  };
  const cause = sanitizedCause(err.cause, 0);
  return ApplicationFailure.create({
    type: err.code,
    message,
    nonRetryable: !err.retryable,
    details: [details],
    ...(err.retryable && err.retryAfterMs !== undefined ? { nextRetryDelay: err.retryAfterMs } : {}),
    ...(cause ? { cause } : {}),
  });
}

/** A plain copy of an error chain (name, message, stack, code) with every string redacted. */
function sanitizedCause(cause: unknown, depth: number): Error | undefined {
  if (cause === undefined || cause === null || depth > 4) return undefined;
  if (cause instanceof TemporalFailure) return cause;
  const source = cause instanceof Error ? cause : new Error(String(cause));
  const inner = sanitizedCause(source.cause, depth + 1);
  const copy = new Error(redact(source.message), inner ? { cause: inner } : undefined);
  copy.name = redact(source.name);
  copy.stack = source.stack === undefined ? undefined : redact(source.stack);
  const code = (source as { code?: unknown }).code;
  if (typeof code === 'string') Object.assign(copy, { code: redact(code) });
  return copy;
}
