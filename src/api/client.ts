// AdminApiClient: the admin API (docs/contract.md) over undici, used only by activities.
//
// Non-idempotent policy (which calls, and when a request may have reached the API: docs/design.md, "No
// duplicate agent jobs"): createAgentJob and sendAgentMessage then raise OutcomeUnknown (non-retryable),
// naming the project, the time of the call and what to check before creating it again; failures before
// anything was sent (connection refused, DNS, connect timeout) and 429 stay retryable. To make "before
// sending" knowable, these two calls go through a dedicated pool without keep-alive (pipelining 0): each
// opens a fresh connection, so a stale keep-alive socket closed by the server can never turn into a false
// OutcomeUnknown. They are rate-limited (100/project/hour), so the extra handshake costs nothing.
// startExport and triggerUpdate are not idempotent either, but a duplicate is wasted work (an export, a
// build), so their ambiguous failures stay retryable (Timeout, NetworkError, ServerError, MalformedResponse).
// GETs and generateBundle are safe to retry.
//
// Retries belong to Temporal (docs/design.md, "Errors"): no RetryAgent, no interceptors. Every call
// has connect/headers/body timeouts and an overall deadline, AbortSignal.any([caller signal,
// AbortSignal.timeout(totalMs)]). An abort by the caller's signal (activity cancellation) rethrows the
// signal's reason unchanged, so Temporal reports a cancellation rather than a failure.
import { Pool } from 'undici';
import type { Dispatcher } from 'undici';
import type { z } from 'zod';
import { apiCallTracer } from '../observability/tracing';
import type { ApiCallEnd, ApiCallTracer } from '../observability/tracer';
import { ERROR_BODY_BYTES, readCapped } from './capped-body';
import { checkAdminApiKey, checkHttpUrl, redact } from './credentials';
import {
  type AdminApiError,
  MalformedResponseError,
  NetworkError,
  OutcomeUnknownError,
  PlanRequiredError,
  TimeoutError,
  errorClassForStatus,
  forbiddenMessage,
} from './errors';
import { type AdminKeySource, type FileKeyOptions, fileKey, fixedKey } from './key-source';
import { parseRetryAfter } from './retry-after';
import {
  KNOWN_AGENT_STATUSES,
  KNOWN_EXPORT_STATUSES,
  KNOWN_UPDATE_STATUSES,
  agentJobSchema,
  bundleSchema,
  deploymentUpdateSchema,
  errorBodySchema,
  staticExportJobSchema,
  updateTriggerSchema,
} from './schemas';
import type {
  AdminApi,
  AdminApiOperation,
  AgentJob,
  Bundle,
  CallOptions,
  DeploymentUpdate,
  StartExportRequest,
  StaticExportJob,
  UpdateTrigger,
} from './types';

export interface ClientTimeouts {
  /** TCP (+TLS) connect. */
  connectMs: number;
  /**
   * From request sent to response headers (undici's timer, on the keep-alive pool; undici arms none
   * on the no-keep-alive pool of creates/messages, which totalMs bounds). undici's timers tick every
   * ~0.5 s, so small values fire up to ~0.7 s late.
   */
  headersMs: number;
  /** Maximum idle time between body chunks. */
  bodyMs: number;
  /** Whole call, queueing included. */
  totalMs: number;
}

export const DEFAULT_TIMEOUTS: ClientTimeouts = {
  connectMs: 5_000,
  headersMs: 30_000,
  bodyMs: 30_000,
  totalMs: 45_000,
};

/** One HTTP call, for metrics. status is the HTTP status ("201") or an error code ("Timeout"). */
export interface ApiCallEvent {
  operation: AdminApiOperation;
  status: string;
  durationMs: number;
}

export interface ApiLogger {
  warn(message: string): void;
}

export interface AdminApiClientOptions {
  baseUrl: string;
  /** The admin key (ADMIN_API_KEY); or, instead, apiKeyFile. */
  apiKey?: string;
  /** A file holding the key (ADMIN_API_KEY_FILE), re-read when it changes and after a 401 (key-source.ts). */
  apiKeyFile?: string;
  /** Told when a rotated key file was picked up (never the key itself). */
  onKeyFileChange?: FileKeyOptions['onChange'];
  timeouts?: Partial<ClientTimeouts>;
  onCall?: (event: ApiCallEvent) => void;
  /** Receives one line per unknown status value; default console. */
  logger?: ApiLogger;
  /** Keep-alive connections to the API (default 256). */
  maxConnections?: number;
  /** Wall clock for OutcomeUnknown messages and HTTP-date Retry-After (default Date.now). */
  now?: () => number;
  /** One span per call (default: the process's tracer when tracing is on, src/observability/tracing.ts). */
  tracer?: ApiCallTracer;
}

/** Error codes of network failures that happen before a request can have been sent. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_INVALID_ARG',
]);
const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);
const MAX_BODY_BYTES = 4 * 1024 * 1024;

interface Response {
  code: number;
  headers: Dispatcher.ResponseData['headers'];
  text: string;
}

interface Route {
  operation: AdminApiOperation;
  method: 'GET' | 'POST';
  path: string;
  /** The path as a template (SPEC 1), for spans: ids stay out of span names. */
  template: string;
  body?: unknown;
  /** False for createAgentJob / sendAgentMessage: ambiguous failures become OutcomeUnknown. */
  idempotent: boolean;
  /** Static-export routes: a 403 may mean the plan does not include static export. */
  planRoute: boolean;
  /** For OutcomeUnknown messages. */
  describe?: (at: string) => string;
}

/** Every operation's method and path template (docs/contract.md). */
const ROUTES: Record<AdminApiOperation, `${Route['method']} /${string}`> = {
  createAgentJob: 'POST /v2/agent/{projectId}/job',
  getAgentJob: 'GET /v2/agent/{projectId}/job/{id}',
  sendAgentMessage: 'POST /v2/agent/{projectId}/job/{id}/message',
  startExport: 'POST /v1/static-export/jobs',
  getExport: 'GET /v1/static-export/jobs/{jobId}',
  generateBundle: 'POST /v1/static-export/jobs/{jobId}/bundle',
  triggerUpdate: 'POST /v1/project/update/{projectId}',
  getUpdateStatus: 'GET /v1/project/update-status/{statusId}',
};
const NOT_IDEMPOTENT: ReadonlySet<AdminApiOperation> = new Set(['createAgentJob', 'sendAgentMessage']);

/** The route of one call: the template's `{...}` filled with `ids` in order (URI-encoded). */
function routeOf(operation: AdminApiOperation, ids: string[], extra: Pick<Route, 'body' | 'describe'> = {}): Route {
  const [method, template] = ROUTES[operation].split(' ') as [Route['method'], string];
  let i = 0;
  const path = template.replace(/\{\w+\}/g, () => encodeURIComponent(ids[i++]!));
  const planRoute = template.startsWith('/v1/static-export/');
  return { operation, method, template, path, idempotent: !NOT_IDEMPOTENT.has(operation), planRoute, ...extra };
}

function errorCodeOf(err: unknown): string {
  if (err && typeof err === 'object') {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    // Node's happy-eyeballs connect failure is an AggregateError of per-address errors.
    const inner = (err as { errors?: unknown }).errors;
    if (Array.isArray(inner) && inner.length > 0) return errorCodeOf(inner[0]);
  }
  return 'UNKNOWN';
}

/** A call's span outcome: the status and Retry-After of its response, or the error code when none came. */
function callOutcome(response: Response | undefined, status: string | undefined): ApiCallEnd {
  if (!response) return { errorType: status ?? 'Unknown' };
  const raw = response.headers['retry-after'];
  const retryAfter = Array.isArray(raw) ? raw[0] : raw;
  const failed = status !== undefined && status !== String(response.code);
  return {
    statusCode: response.code,
    ...(retryAfter !== undefined ? { retryAfter } : {}),
    ...(failed ? { errorType: status } : {}),
  };
}

const AGENT_STATUS = { what: 'agent job', known: KNOWN_AGENT_STATUSES };
const EXPORT_STATUS = { what: 'static export', known: KNOWN_EXPORT_STATUSES };
/** Which statuses an operation's answer may carry, for the "unknown status" line. */
const STATUS_KINDS: Partial<Record<AdminApiOperation, { what: string; known: ReadonlySet<string> }>> = {
  createAgentJob: AGENT_STATUS,
  getAgentJob: AGENT_STATUS,
  sendAgentMessage: AGENT_STATUS,
  startExport: EXPORT_STATUS,
  getExport: EXPORT_STATUS,
  getUpdateStatus: { what: 'deployment update', known: KNOWN_UPDATE_STATUSES },
};

export class AdminApiClient implements AdminApi {
  readonly baseUrl: string;
  readonly timeouts: ClientTimeouts;
  readonly #keys: AdminKeySource;
  readonly #basePath: string;
  readonly #origin: string;
  readonly #pool: Pool;
  /** No keep-alive: one fresh connection per non-idempotent call (see header). */
  readonly #freshPool: Pool;
  readonly #onCall?: (event: ApiCallEvent) => void;
  readonly #tracer?: ApiCallTracer;
  readonly #logger: ApiLogger;
  readonly #now: () => number;
  readonly #loggedStatuses = new Set<string>();

  constructor(options: AdminApiClientOptions) {
    if (options.apiKey !== undefined && options.apiKeyFile !== undefined)
      throw new Error('AdminApiClient: give apiKey or apiKeyFile, not both');
    if (options.apiKeyFile === undefined) {
      const keyProblem = checkAdminApiKey(options.apiKey);
      if (keyProblem) throw new Error(`AdminApiClient: ${keyProblem}`);
    }
    const urlProblem = checkHttpUrl('ADMIN_API_URL', options.baseUrl);
    if (urlProblem) throw new Error(`AdminApiClient: ${urlProblem}`);
    const url = new URL(options.baseUrl);
    this.baseUrl = options.baseUrl;
    this.#origin = url.origin;
    this.#basePath = url.pathname.replace(/\/+$/, '');
    this.#keys =
      options.apiKeyFile === undefined
        ? fixedKey(options.apiKey as string)
        : fileKey(options.apiKeyFile, { onChange: options.onKeyFileChange });
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
    this.#onCall = options.onCall;
    this.#tracer = options.tracer ?? apiCallTracer();
    this.#logger = options.logger ?? console;
    this.#now = options.now ?? Date.now;
    const poolOptions: Pool.Options = {
      connect: { timeout: this.timeouts.connectMs },
      headersTimeout: this.timeouts.headersMs,
      bodyTimeout: this.timeouts.bodyMs,
    };
    this.#pool = new Pool(url.origin, { ...poolOptions, connections: options.maxConnections ?? 256 });
    this.#freshPool = new Pool(url.origin, { ...poolOptions, pipelining: 0 });
  }

  /** Closes both connection pools; in-flight calls finish first. */
  async close(): Promise<void> {
    await Promise.all([this.#pool.close(), this.#freshPool.close()]);
  }

  /** Redacts this client's keys (every one it has sent), bearer tokens and admin-key-shaped strings. */
  redact(text: string): string {
    return redact(text, this.#keys.seen);
  }

  createAgentJob(projectId: string, prompt: string, options?: CallOptions): Promise<AgentJob> {
    const describe = (at: string) =>
      `creating an agent job for project "${projectId}" at ${at} may or may not have taken effect; ` +
      `it is not retried, to avoid a duplicate pull request. Check the project's agent jobs and the ` +
      `repository's pull requests opened after ${at} before creating it again`;
    return this.#call(routeOf('createAgentJob', [projectId], { body: { prompt }, describe }), agentJobSchema, options);
  }

  getAgentJob(projectId: string, jobId: string, options?: CallOptions): Promise<AgentJob> {
    return this.#call(routeOf('getAgentJob', [projectId, jobId]), agentJobSchema, options);
  }

  sendAgentMessage(projectId: string, jobId: string, prompt: string, options?: CallOptions): Promise<AgentJob> {
    const describe = (at: string) =>
      `sending a follow-up message to agent job ${jobId} of project "${projectId}" at ${at} may or may ` +
      `not have taken effect; it is not retried, to avoid running the instruction twice. Check the ` +
      `job (GET /v2/agent/${projectId}/job/${jobId}) and its pull request before sending it again`;
    const route = routeOf('sendAgentMessage', [projectId, jobId], { body: { prompt }, describe });
    return this.#call(route, agentJobSchema, options);
  }

  startExport(request: StartExportRequest, options?: CallOptions): Promise<StaticExportJob> {
    const body: StartExportRequest = { domain: request.domain };
    if (request.version !== undefined) body.version = request.version;
    if (request.paths !== undefined) body.paths = request.paths;
    return this.#call(routeOf('startExport', [], { body }), staticExportJobSchema, options);
  }

  getExport(jobId: string, options?: CallOptions): Promise<StaticExportJob> {
    return this.#call(routeOf('getExport', [jobId]), staticExportJobSchema, options);
  }

  generateBundle(jobId: string, options?: CallOptions): Promise<Bundle> {
    return this.#call(routeOf('generateBundle', [jobId]), bundleSchema, options);
  }

  /** POST /v1/project/update/{projectId}: build the deployment branch now. */
  triggerUpdate(projectId: string, options?: CallOptions): Promise<UpdateTrigger> {
    return this.#call(routeOf('triggerUpdate', [projectId]), updateTriggerSchema, options);
  }

  getUpdateStatus(statusId: string, options?: CallOptions): Promise<DeploymentUpdate> {
    return this.#call(routeOf('getUpdateStatus', [statusId]), deploymentUpdateSchema, options);
  }

  async #call<S extends z.ZodType>(route: Route, schema: S, options?: CallOptions): Promise<z.output<S>> {
    const started = performance.now();
    const startedAt = new Date(this.#now()).toISOString();
    let status: string | undefined;
    const callerSignal = options?.signal;
    const timeoutSignal = AbortSignal.timeout(this.timeouts.totalMs);
    const signal = callerSignal ? AbortSignal.any([callerSignal, timeoutSignal]) : timeoutSignal;
    const span = this.#tracer?.start({
      operation: route.operation,
      method: route.method,
      route: route.template,
      origin: this.#origin,
    });
    let response: Response | undefined;
    try {
      callerSignal?.throwIfAborted();
      let key = this.#keys.current();
      try {
        response = await this.#send(route, key, signal);
        // A rotated key file: the key we sent may be the old one. Read the file once more and, when it
        // holds another key, send once more with it (a 401 means nothing was done, so this is safe).
        const rotated = response.code === 401 ? this.#keys.afterUnauthorized(key) : undefined;
        if (rotated !== undefined) {
          key = rotated;
          response = await this.#send(route, key, signal);
        }
        status = String(response.code);
      } catch (err) {
        throw this.#transportError(err, route, startedAt, callerSignal, timeoutSignal);
      }
      if (response.code < 200 || response.code >= 300) throw this.#httpError(response, route, startedAt);
      return this.#parse(route, schema, response, startedAt);
    } catch (err) {
      if (status === undefined) status = (err as AdminApiError | undefined)?.code ?? 'Cancelled';
      throw err;
    } finally {
      span?.end(callOutcome(response, status));
      this.#onCall?.({
        operation: route.operation,
        status: status ?? 'Unknown',
        durationMs: performance.now() - started,
      });
    }
  }

  /** One HTTP request with `key`; its body read (capped). */
  async #send(route: Route, key: string, signal: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${key}`,
      accept: 'application/json',
      'user-agent': 'docs-admin-temporal',
    };
    let body: string | undefined;
    if (route.method === 'POST') {
      body = route.body === undefined ? '' : JSON.stringify(route.body);
      if (body !== '') headers['content-type'] = 'application/json';
    }
    const dispatcher = route.idempotent ? this.#pool : this.#freshPool;
    const response = await dispatcher.request({
      method: route.method,
      path: this.#basePath + route.path,
      headers,
      body,
      signal,
    });
    // An error answer is read only as far as its `{"error": ...}` needs: its body is not the API's to size.
    const cap = response.statusCode >= 200 && response.statusCode < 300 ? MAX_BODY_BYTES : ERROR_BODY_BYTES;
    return { code: response.statusCode, headers: response.headers, text: await readCapped(response.body, cap) };
  }

  #parse<S extends z.ZodType>(route: Route, schema: S, { code, text }: Response, startedAt: string): z.output<S> {
    const malformed = (what: string, cause?: unknown) =>
      this.#ambiguous(
        route,
        startedAt,
        new MalformedResponseError(`${route.operation}: HTTP ${code} with ${what}`, {
          status: code,
          cause,
        }),
      );
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw malformed(`a body that is not JSON: ${this.#snippet(text)}`, err);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
      throw malformed(`an unexpected body (${this.redact(issues)})`);
    }
    const value = parsed.data as { status?: unknown };
    if (typeof value.status === 'string') this.#noteStatus(route.operation, value.status);
    return parsed.data;
  }

  #noteStatus(operation: AdminApiOperation, status: string): void {
    const kind = STATUS_KINDS[operation];
    if (!kind || kind.known.has(status)) return;
    const key = `${kind.what}:${status}`;
    if (this.#loggedStatuses.has(key)) return;
    this.#loggedStatuses.add(key);
    this.#logger.warn(
      `admin API: unknown ${kind.what} status "${this.redact(status).slice(0, 100)}"; treating it as not yet terminal`,
    );
  }

  #httpError({ code, headers, text }: Response, route: Route, startedAt: string): Error {
    let apiText: string;
    try {
      const parsed = errorBodySchema.safeParse(JSON.parse(text));
      apiText = this.#snippet(parsed.success ? parsed.data.error : text);
    } catch {
      apiText = this.#snippet(text);
    }
    const retryAfterRaw = headers['retry-after'];
    const retryAfterMs = parseRetryAfter(Array.isArray(retryAfterRaw) ? retryAfterRaw[0] : retryAfterRaw, this.#now());
    const ErrorClass = errorClassForStatus(code, route.planRoute, apiText);
    const message =
      ErrorClass === PlanRequiredError
        ? `${route.operation}: static export needs an Enterprise plan (HTTP 403: ${apiText})`
        : code === 403
          ? forbiddenMessage(route.operation, route.method, route.planRoute, apiText)
          : `${route.operation}: HTTP ${code}: ${apiText}`;
    const err = new ErrorClass(message, { status: code, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
    // A 5xx may come after the server committed the change.
    return code >= 500 ? this.#ambiguous(route, startedAt, err) : err;
  }

  #transportError(
    err: unknown,
    route: Route,
    startedAt: string,
    callerSignal: AbortSignal | undefined,
    timeoutSignal: AbortSignal,
  ): unknown {
    // Cancellation by the caller (activity cancelled): surface the caller's reason unchanged.
    if (callerSignal?.aborted) return callerSignal.reason ?? err;
    const code = errorCodeOf(err);
    const cause = err instanceof Error ? err : undefined;
    let mapped: AdminApiError;
    if (timeoutSignal.aborted) {
      mapped = new TimeoutError(`${route.operation}: no complete response within ${this.timeouts.totalMs}ms`, {
        cause,
      });
    } else if (TIMEOUT_CODES.has(code)) {
      mapped = new TimeoutError(`${route.operation}: timed out (${code})`, { cause });
    } else {
      const detail = err instanceof Error ? this.redact(err.message) : 'unknown error';
      mapped = new NetworkError(`${route.operation}: network error ${code}: ${detail}`, { cause });
    }
    return NOT_SENT_CODES.has(code) && !timeoutSignal.aborted ? mapped : this.#ambiguous(route, startedAt, mapped);
  }

  /** For non-idempotent calls, an error after the request may have been sent becomes OutcomeUnknown. */
  #ambiguous(route: Route, startedAt: string, err: AdminApiError): AdminApiError {
    if (route.idempotent || !route.describe) return err;
    return new OutcomeUnknownError(`${route.operation}: ${err.code} (${err.message}); ${route.describe(startedAt)}`, {
      ...(err.status !== undefined ? { status: err.status } : {}),
      cause: err,
    });
  }

  /** At most 200 characters of the API's text, redacted before it is cut (a cut key would escape redaction). */
  #snippet(text: string): string {
    const flat = this.redact(text).replace(/\s+/g, ' ').trim();
    return flat.length > 200 ? `${flat.slice(0, 200)}...` : flat || '(empty body)';
  }
}
