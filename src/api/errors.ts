// One error taxonomy for the admin API. `code` is stable and becomes the ApplicationFailure `type`
// (src/activities/api-call.ts); `retryable` decides Temporal's `nonRetryable`; `retryAfterMs`, from
// Retry-After, becomes `nextRetryDelay`. Messages are redacted by the client before construction.
// The codes are listed with every other failure type in src/shared/failures.ts.
import { ApiFailure, type ApiFailureType } from '../shared/failures';

export type AdminApiErrorCode = ApiFailureType;

export interface AdminApiErrorOptions {
  status?: number;
  retryAfterMs?: number;
  cause?: unknown;
}

export abstract class AdminApiError extends Error {
  abstract readonly code: AdminApiErrorCode;
  abstract readonly retryable: boolean;
  /** True only for OutcomeUnknown: the call may or may not have taken effect. */
  readonly outcomeUnknown: boolean = false;
  readonly status?: number;
  readonly retryAfterMs?: number;

  constructor(message: string, options: AdminApiErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    if (options.status !== undefined) this.status = options.status;
    if (options.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
  }
}

/** One subclass per code, named `name` (what `err.name` and stack traces show). */
function errorClass<C extends AdminApiErrorCode>(name: string, code: C, retryable: boolean) {
  const ErrorClass = class extends AdminApiError {
    readonly code = code;
    readonly retryable = retryable;
  };
  Object.defineProperty(ErrorClass, 'name', { value: name });
  return ErrorClass;
}

export const InvalidRequestError = errorClass('InvalidRequestError', ApiFailure.invalidRequest, false);
export const UnauthorizedError = errorClass('UnauthorizedError', ApiFailure.unauthorized, false);
export const ForbiddenError = errorClass('ForbiddenError', ApiFailure.forbidden, false);
export const PlanRequiredError = errorClass('PlanRequiredError', ApiFailure.planRequired, false);
export const NotFoundError = errorClass('NotFoundError', ApiFailure.notFound, false);
export const ConflictError = errorClass('ConflictError', ApiFailure.conflict, true);
export const RateLimitedError = errorClass('RateLimitedError', ApiFailure.rateLimited, true);
export const ServerError = errorClass('ServerError', ApiFailure.serverError, true);
export const NetworkError = errorClass('NetworkError', ApiFailure.networkError, true);
export const TimeoutError = errorClass('TimeoutError', ApiFailure.timeout, true);
export const MalformedResponseError = errorClass('MalformedResponseError', ApiFailure.malformedResponse, true);
/** A non-idempotent call (agent create/message) may or may not have taken effect. Never retried. */
export class OutcomeUnknownError extends AdminApiError {
  readonly code = ApiFailure.outcomeUnknown;
  readonly retryable = false;
  override readonly outcomeUnknown = true;
}

type ErrorClass = new (message: string, options?: AdminApiErrorOptions) => AdminApiError;

/**
 * THE table from HTTP status to error class. 403 on the static-export routes is refined to
 * PlanRequired by the client (it knows the route); 408 is the server timing out our request (safe);
 * other 4xx are client mistakes; other 5xx are server errors.
 */
export const STATUS_TO_ERROR: Readonly<Record<number, ErrorClass>> = {
  400: InvalidRequestError,
  401: UnauthorizedError,
  403: ForbiddenError,
  404: NotFoundError,
  408: TimeoutError,
  409: ConflictError,
  422: InvalidRequestError,
  429: RateLimitedError,
};

/** The API's own text of a static-export 403 that names the plan or the feature (the emulator's, and Mintlify's wording). */
const PLAN_TEXT = /\b(plan|enterprise|not enabled)\b/i;

/**
 * A 403's class: PlanRequired on a static-export route whose answer names the plan or the feature,
 * else Forbidden (its message lists the likely causes: forbiddenCauses).
 */
export function errorClassForStatus(status: number, planRoute = false, apiText = ''): ErrorClass {
  if (status === 403 && planRoute && PLAN_TEXT.test(apiText)) return PlanRequiredError;
  const exact = STATUS_TO_ERROR[status];
  if (exact) return exact;
  if (status >= 500) return ServerError;
  if (status >= 400) return InvalidRequestError;
  // 1xx/3xx are not part of the API: treat as a response we cannot use.
  return MalformedResponseError;
}

/**
 * Why the API may have answered 403, most likely first; it does not say which. Every method but GET and
 * HEAD needs a key with the write scope; any key may be limited to an IP allowlist; static export needs
 * the Enterprise plan and the feature enabled.
 */
export function forbiddenCauses(method: string, exportRoute: boolean): string[] {
  const causes: string[] = [];
  if (method !== 'GET' && method !== 'HEAD')
    causes.push('the admin key lacks the write scope (every method but GET and HEAD needs it)');
  causes.push("this worker's IP address is not in the admin key's IP allowlist");
  if (exportRoute) causes.push("the organization's plan does not include static export or the feature is not enabled");
  return causes;
}

/** The message of a 403 that is not a plain PlanRequired: the operation, the API's text, the causes in order. */
export function forbiddenMessage(operation: string, method: string, exportRoute: boolean, apiText: string): string {
  const causes = forbiddenCauses(method, exportRoute).map((cause, i) => `(${i + 1}) ${cause}`);
  return `${operation}: HTTP 403 Forbidden (${apiText}); likely causes, most likely first: ${causes.join('; ')}. Not retried`;
}
