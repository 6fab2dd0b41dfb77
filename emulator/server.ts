// The admin API emulator: a real node:http server behaving like the admin API of docs/contract.md, plus fault injection,
// counters and control endpoints under /_emulator/ (no auth; they exist only on the emulator).
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AdminApiOperation, StartExportRequest } from '../src/api/types';
import { type Listening, listen, readBody, sendError, sendJson, StatusError } from '../src/process/small-server';
import { type EmulatorRoute, type FaultRule, FaultInjector } from './faults';
import { DEFAULT_OPTIONS, type EmulatorOptions, type ResponseQuirks } from './options';
import { type FilesChanged, type PushRequest, Publishing, type UpdateView, updateView } from './publishing';
import { SlidingWindowLimiter } from './rate-limit';
import {
  type AgentJobRecord,
  type ExportRecord,
  agentJobView,
  exportArchive,
  exportView,
  newExportRecord,
} from './state';

export interface EmulatorCounters {
  /** route -> HTTP status (or "reset") -> calls. */
  calls: Record<string, Record<string, number>>;
  /** projectId -> agent jobs created (faulted creates that committed included). */
  agentJobsCreated: Record<string, number>;
  agentMessages: number;
  exportsStarted: number;
  /** Deployment updates accepted (202). */
  updatesTriggered: number;
  bundlesGenerated: number;
  /** GET/HEAD of a bundle link that was valid. */
  downloadsOk: number;
  /** GET/HEAD of an expired link or one with a bad signature. */
  downloadsDenied: number;
  rateLimited: number;
  faultsInjected: Record<string, number>;
}

export interface EmulatedAgentJob {
  id: string;
  projectId: string;
  prompt: string;
  messages: string[];
  createdAt: string;
  /** When the job stops being active (its current run ends). */
  activeUntil: string;
  status: string;
  prLink: string | null;
}

export interface EmulatedExport {
  jobId: string;
  domain: string;
  createdAt: string;
  /** When the export completes (or fails). */
  finishesAt: string;
  /** The published commit it renders, or null (default content). */
  commitSha: string | null;
  /** Pages it exports (grows with each published commit). */
  totalPages: number;
}

export interface EmulatedUpdate extends UpdateView {
  statusId: string;
  projectId: string;
}

const HOSTNAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const MAX_BODY = 1024 * 1024;

const emptyCounters = (): EmulatorCounters => ({
  calls: {},
  agentJobsCreated: {},
  agentMessages: 0,
  exportsStarted: 0,
  updatesTriggered: 0,
  bundlesGenerated: 0,
  downloadsOk: 0,
  downloadsDenied: 0,
  rateLimited: 0,
  faultsInjected: {},
});

export class Emulator {
  options: EmulatorOptions;
  readonly server: Server;
  #listening: Listening | undefined;
  #agentJobs = new Map<string, AgentJobRecord>();
  #exports = new Map<string, ExportRecord>();
  #prNumbers = new Map<string, number>();
  #counters = emptyCounters();
  /** Calls each key was accepted for: a key rotation's test waits for the new key's before revoking the old. */
  readonly #acceptedByKey = new Map<string, number>();
  #faults: FaultInjector;
  #limiter: SlidingWindowLimiter;
  #updateLimiter: SlidingWindowLimiter;
  readonly #publishing = new Publishing();
  readonly #secret = randomBytes(32);
  #pruneTimer: NodeJS.Timeout | undefined;

  constructor(options: Partial<EmulatorOptions> = {}) {
    this.options = { ...DEFAULT_OPTIONS, ...options };
    this.#faults = new FaultInjector(this.options.seed);
    this.#limiter = new SlidingWindowLimiter(this.options.rateLimit.limit, this.options.rateLimit.windowMs);
    const { limit, windowMs } = this.options.updateRateLimit;
    this.#updateLimiter = new SlidingWindowLimiter(limit, windowMs);
    this.server = createServer((req, res) => {
      this.#handle(req, res).catch((err: unknown) => {
        const bug = () => new StatusError(500, `emulator bug: ${(err as Error).message}`);
        sendError(req, res, err instanceof StatusError ? err : bug());
      });
    });
    this.server.keepAliveTimeout = 10_000;
  }

  get url(): string {
    return this.#listening?.url ?? '';
  }

  /** Where clients reach the emulator: the base of the links it hands out. */
  #publicUrl(): string {
    return this.options.publicUrl ?? this.url;
  }

  async listen(): Promise<void> {
    this.#listening = await listen(this.server, this.options.port, this.options.host);
    this.#pruneTimer = setInterval(() => {
      this.#limiter.prune(this.options.now());
      this.#updateLimiter.prune(this.options.now());
    }, 60_000);
    this.#pruneTimer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.#pruneTimer);
    await this.#listening?.close();
  }

  configure(options: Partial<EmulatorOptions>): void {
    this.options = { ...this.options, ...options };
    this.#limiter.limit = this.options.rateLimit.limit;
    this.#limiter.windowMs = this.options.rateLimit.windowMs;
    this.#updateLimiter.limit = this.options.updateRateLimit.limit;
    this.#updateLimiter.windowMs = this.options.updateRateLimit.windowMs;
  }

  setFaults(rules: readonly FaultRule[], seed?: number): void {
    this.#faults.set(rules, seed);
  }

  faults(): FaultRule[] {
    return this.#faults.rules();
  }

  counters(): EmulatorCounters {
    return structuredClone(this.#counters);
  }

  jobs(): EmulatedAgentJob[] {
    const now = this.options.now();
    return [...this.#agentJobs.values()].map((job) => {
      const view = agentJobView(job, now);
      return {
        id: job.id,
        projectId: job.projectId,
        prompt: job.prompt,
        messages: [...job.messages],
        createdAt: view.createdAt,
        activeUntil: new Date(job.activeUntilMs).toISOString(),
        status: view.status,
        prLink: view.prLink,
      };
    });
  }

  exports(): EmulatedExport[] {
    return [...this.#exports.values()].map((job) => ({
      jobId: job.jobId,
      domain: job.domain,
      createdAt: new Date(job.createdAtMs).toISOString(),
      finishesAt: new Date(job.createdAtMs + job.queuedMs + job.durationMs).toISOString(),
      commitSha: job.published?.commit.sha ?? null,
      totalPages: job.totalPages,
    }));
  }

  /** Moves a project's branch head, as a push or merge on GitHub (and maps a domain to the project). */
  push(request: PushRequest): { sha: string } {
    return { sha: this.#publishing.push(request).sha };
  }

  /** Deployment updates with their project and current view. */
  updates(): EmulatedUpdate[] {
    const now = this.options.now();
    return this.#publishing
      .updates()
      .map((u) => ({ statusId: u.statusId, projectId: u.projectId, ...updateView(u, now, this.#publicUrl()) }));
  }

  /** Forgets every job, window, counter and fault. */
  reset(): void {
    this.#agentJobs.clear();
    this.#exports.clear();
    this.#prNumbers.clear();
    this.#limiter.clear();
    this.#updateLimiter.clear();
    this.#publishing.clear();
    this.#counters = emptyCounters();
    this.#acceptedByKey.clear();
    this.#faults.set([]);
  }

  // ---- request handling ----------------------------------------------------------------------------

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const path = url.pathname;
    if (path.startsWith('/_emulator/')) return this.#control(req, res, path);
    if (path.startsWith('/bundles/')) return this.#download(req, res, url);

    const match = matchRoute(req.method ?? 'GET', path);
    if (!match) {
      sendJson(res, 404, { error: `no route for ${req.method} ${path}` });
      return;
    }
    const { route, params } = match;
    this.#countOnClose(route, res);
    if (this.options.logRequests) process.stderr.write(`${req.method} ${path}\n`);
    const rawBody = req.method === 'POST' ? await readText(req) : '';

    const fault = this.#faults.pick(route);
    if (fault) {
      this.#counters.faultsInjected[fault.kind] = (this.#counters.faultsInjected[fault.kind] ?? 0) + 1;
      switch (fault.kind) {
        case '500-before-commit':
          return this.#answer(res, route, 500, { error: 'internal server error (injected before commit)' });
        case '503':
          res.setHeader('retry-after', String(fault.retryAfterSeconds ?? 1));
          return this.#answer(res, route, 503, { error: 'service unavailable (injected)' });
        case 'reset-before-commit':
          req.socket.destroy();
          return;
        case '429':
          this.#setRetryAfter(res, this.options.now() + (fault.retryAfterSeconds ?? 1) * 1000);
          return this.#answer(res, route, 429, { error: 'rate limit exceeded (injected)' });
        case 'slow':
          await delay(fault.delayMs ?? 10_000);
          break;
        default:
          break;
      }
    }

    let status: number;
    let body: unknown;
    try {
      const key = this.#authorize(req, route);
      [status, body] =
        route === 'triggerUpdate' || route === 'getUpdateStatus'
          ? this.#dispatchUpdate(route, params[0]!, res, key, this.options.now())
          : this.#dispatch(route, params, rawBody, res);
    } catch (err) {
      if (!(err instanceof StatusError)) throw err;
      return this.#answer(res, route, err.status, { error: err.message });
    }

    if (status < 300) body = applyQuirks(body, this.options.quirks);

    // Post-commit faults: the change above took effect, the client does not learn it.
    if (fault && status < 300) {
      if (fault.kind === '500-after-commit')
        return this.#answer(res, route, 500, { error: 'internal server error (injected after commit)' });
      if (fault.kind === 'reset-after-commit') {
        req.socket.destroy();
        return;
      }
      if (fault.kind === 'non-json') {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html><body>502 Bad Gateway (injected non-JSON body)</body></html>');
        return;
      }
    }
    this.#answer(res, route, status, body);
  }

  /** As the real API: 401 for the key, then 403 for the caller's address, the key's scope, the plan. */
  #authorize(req: IncomingMessage, route: EmulatorRoute): string {
    const header = req.headers.authorization ?? '';
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    const key = match?.[1];
    if (!key) throw new StatusError(401, 'missing or malformed Authorization header (expected "Bearer <admin key>")');
    if (!key.startsWith('mint_') || key.length <= 'mint_'.length) {
      throw new StatusError(401, 'invalid API key: admin keys begin with "mint_"');
    }
    const { revokedKeys, validKeys, ipAllowlist, readOnlyKeys } = this.options;
    if (revokedKeys.includes(key)) throw new StatusError(401, `API key ${key} has been revoked or expired`);
    if (validKeys.length > 0 && !validKeys.includes(key)) throw new StatusError(401, 'invalid API key');
    const caller = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    if (ipAllowlist.length > 0 && !ipAllowlist.includes(caller))
      throw new StatusError(403, `requests from ${caller} are not allowed by this API key's IP allowlist`);
    if (req.method !== 'GET' && req.method !== 'HEAD' && readOnlyKeys.includes(key))
      throw new StatusError(403, `this API key is read-only: ${req.method} needs the write scope`);
    if (
      (route === 'startExport' || route === 'getExport' || route === 'generateBundle') &&
      this.options.nonEnterpriseKeys.includes(key)
    ) {
      throw new StatusError(403, 'static export is not enabled for this organization: it requires an Enterprise plan');
    }
    this.#acceptedByKey.set(key, this.acceptedCalls(key) + 1);
    return key;
  }

  /** How many calls `key` was accepted for (past the key, address, scope and plan checks). */
  acceptedCalls(key: string): number {
    return this.#acceptedByKey.get(key) ?? 0;
  }

  /** Makes `key` valid (a rotation's first step); with validKeys empty every key is valid already. */
  addKey(key: string): void {
    this.configure({
      validKeys: [...this.options.validKeys.filter((k) => k !== key), key],
      revokedKeys: this.options.revokedKeys.filter((k) => k !== key),
    });
  }

  /** Revokes `key`: from now on it gets 401 (a rotation's last step). */
  revokeKey(key: string): void {
    this.configure({
      validKeys: this.options.validKeys.filter((k) => k !== key),
      revokedKeys: [...this.options.revokedKeys.filter((k) => k !== key), key],
    });
  }

  #dispatch(route: EmulatorRoute, params: string[], rawBody: string, res: ServerResponse): [number, unknown] {
    const now = this.options.now();
    switch (route) {
      case 'createAgentJob': {
        const projectId = params[0]!;
        const prompt = promptOf(rawBody);
        this.#takeRate(projectId, now, res);
        const id = `aj_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
        const job: AgentJobRecord = {
          id,
          projectId,
          prompt,
          messages: [],
          createdAtMs: now,
          activeUntilMs: now + (this.options.durationFor?.('agent', prompt) ?? this.options.agentActiveMs),
          outcome: this.options.agentOutcome(prompt, projectId),
          repository: this.options.repositoryFor(projectId),
          model: this.options.model,
          prNumber: null,
        };
        this.#settlePr(job);
        this.#agentJobs.set(id, job);
        this.#counters.agentJobsCreated[projectId] = (this.#counters.agentJobsCreated[projectId] ?? 0) + 1;
        return [201, agentJobView(job, now)];
      }
      case 'getAgentJob':
        return [200, agentJobView(this.#agentJob(params[0]!, params[1]!), now)];
      case 'sendAgentMessage': {
        const [projectId, jobId] = params as [string, string];
        const job = this.#agentJob(projectId, jobId);
        const prompt = promptOf(rawBody);
        this.#takeRate(projectId, now, res);
        job.messages.push(prompt);
        job.activeUntilMs = now + (this.options.durationFor?.('agent', prompt) ?? this.options.agentActiveMs);
        job.outcome = this.options.agentOutcome(prompt, projectId);
        this.#settlePr(job);
        this.#counters.agentMessages++;
        return [200, agentJobView(job, now)];
      }
      case 'startExport': {
        const request = exportRequestOf(rawBody);
        const jobId = `exp_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
        const published = this.#publishing.publishedFor(request.domain, now);
        const job = newExportRecord(jobId, request, now, this.options, published);
        this.#exports.set(jobId, job);
        this.#counters.exportsStarted++;
        return [202, exportView(job, now)];
      }
      case 'getExport':
        return [200, exportView(this.#export(params[0]!), now)];
      case 'generateBundle': {
        const job = this.#export(params[0]!);
        const view = exportView(job, now);
        if (view.status !== 'completed') {
          throw new StatusError(409, `export job ${job.jobId} is not completed (status: ${view.status})`);
        }
        const archive = exportArchive(job);
        const expires = now + this.options.bundleTtlMs;
        const base = this.#publicUrl();
        this.#counters.bundlesGenerated++;
        return [
          200,
          {
            jobId: job.jobId,
            bundleUrl: `${base}/bundles/${job.jobId}.tar.gz?expires=${expires}&sig=${this.#sign(job.jobId, expires)}`,
            sizeBytes: archive.length,
            expiresAt: new Date(expires).toISOString(),
          },
        ];
      }
      case 'triggerUpdate':
      case 'getUpdateStatus':
        throw new StatusError(500, 'routed by #handle');
      case 'downloadBundle':
        throw new StatusError(404, 'not an API route');
    }
  }

  /** Deployment updates: trigger (one budget per organization) and status. */
  #dispatchUpdate(
    route: 'triggerUpdate' | 'getUpdateStatus',
    id: string,
    res: ServerResponse,
    key: string,
    now: number,
  ): [number, unknown] {
    switch (route) {
      case 'triggerUpdate': {
        const projectId = id;
        if (this.options.missingProjects.includes(projectId))
          throw new StatusError(404, `project ${projectId} not found`);
        // One budget per organization; the emulator has one organization per API key.
        const decision = this.#updateLimiter.take(key, now);
        if (!decision.ok) {
          this.#counters.rateLimited++;
          this.#setRetryAfter(res, decision.retryAtMs);
          throw new StatusError(
            429,
            `rate limit exceeded: ${this.options.updateRateLimit.limit} update triggers per window`,
          );
        }
        const statusId = `upd_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
        this.#publishing.add({
          statusId,
          projectId,
          commit: { ...this.#publishing.head(projectId) },
          createdAtMs: now,
          queuedMs: this.options.updateQueuedMs,
          buildMs: this.options.durationFor?.('update', projectId) ?? this.options.updateBuildMs,
          failure: this.options.failingUpdateProjects.includes(projectId)
            ? `build failed: mdx compile error in docs/index.mdx (emulated for ${projectId})`
            : null,
        });
        this.#counters.updatesTriggered++;
        return [202, { statusId }];
      }
      case 'getUpdateStatus': {
        const update = this.#publishing.get(id);
        if (!update) throw new StatusError(404, `update status ${id} not found`);
        return [200, updateView(update, now, this.#publicUrl())];
      }
    }
  }

  /** A finished run that opens a PR keeps its number across follow-ups (same branch, same PR). */
  #settlePr(job: AgentJobRecord): void {
    if (job.outcome !== 'pr' || job.prNumber !== null) return;
    const next = (this.#prNumbers.get(job.repository) ?? 0) + 1;
    this.#prNumbers.set(job.repository, next);
    job.prNumber = next;
  }

  #takeRate(projectId: string, now: number, res: ServerResponse): void {
    const decision = this.#limiter.take(projectId, now);
    if (decision.ok) return;
    this.#counters.rateLimited++;
    this.#setRetryAfter(res, decision.retryAtMs);
    throw new StatusError(
      429,
      `rate limit exceeded: ${this.options.rateLimit.limit} agent jobs and messages per project per window`,
    );
  }

  #setRetryAfter(res: ServerResponse, retryAtMs: number): void {
    const now = this.options.now();
    if (this.options.retryAfterForm === 'seconds') {
      res.setHeader('retry-after', String(Math.max(0, Math.ceil((retryAtMs - now) / 1000))));
    } else if (this.options.retryAfterForm === 'http-date') {
      // HTTP-dates have one-second resolution: round up so the client never comes back too early.
      res.setHeader('retry-after', new Date(Math.ceil(retryAtMs / 1000) * 1000).toUTCString());
    }
  }

  #agentJob(projectId: string, jobId: string): AgentJobRecord {
    const job = this.#agentJobs.get(jobId);
    if (!job || job.projectId !== projectId) throw new StatusError(404, `agent job ${jobId} not found`);
    return job;
  }

  #export(jobId: string): ExportRecord {
    const job = this.#exports.get(jobId);
    if (!job) throw new StatusError(404, `export job ${jobId} not found`);
    return job;
  }

  // ---- bundle links --------------------------------------------------------------------------------

  #sign(jobId: string, expires: number): string {
    return createHmac('sha256', this.#secret).update(`${jobId}\n${expires}`).digest('base64url');
  }

  async #download(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    this.#countOnClose('downloadBundle', res);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return sendJson(res, 405, { error: 'method not allowed' });
    }
    const fault = this.#faults.pick('downloadBundle');
    if (fault) {
      this.#counters.faultsInjected[fault.kind] = (this.#counters.faultsInjected[fault.kind] ?? 0) + 1;
      if (fault.kind === 'slow') await delay(fault.delayMs ?? 10_000);
      else if (fault.kind.startsWith('reset')) return void req.socket.destroy();
      else if (fault.kind === '503') return sendJson(res, 503, { error: 'service unavailable (injected)' });
      else if (fault.kind.startsWith('500')) return sendJson(res, 500, { error: 'internal server error (injected)' });
    }
    const match = /^\/bundles\/([^/]+)\.tar\.gz$/.exec(url.pathname);
    const job = match ? this.#exports.get(decodeURIComponent(match[1]!)) : undefined;
    const expires = Number(url.searchParams.get('expires'));
    const sig = url.searchParams.get('sig') ?? '';
    if (!job || !job.archive) return sendJson(res, 404, { error: 'no such bundle' });
    const expected = Buffer.from(this.#sign(job.jobId, expires));
    const given = Buffer.from(sig);
    const valid = Number.isFinite(expires) && given.length === expected.length && timingSafeEqual(given, expected);
    if (!valid || this.options.now() >= expires) {
      this.#counters.downloadsDenied++;
      res.writeHead(403, { 'content-type': 'application/xml' });
      res.end(
        `<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>${valid ? 'Request has expired' : 'Signature does not match'}</Message></Error>`,
      );
      return;
    }
    this.#counters.downloadsOk++;
    const archive = job.archive;
    const headers: Record<string, string | number> = {
      'content-type': 'application/gzip',
      'accept-ranges': 'bytes',
      'content-disposition': `attachment; filename="${job.jobId}.tar.gz"`,
      etag: `"${job.jobId}"`,
    };
    const range = parseRange(req.headers.range, archive.length);
    if (range === 'unsatisfiable') {
      res.writeHead(416, { ...headers, 'content-range': `bytes */${archive.length}` });
      return void res.end();
    }
    if (range) {
      const [start, end] = range;
      res.writeHead(206, {
        ...headers,
        'content-length': end - start + 1,
        'content-range': `bytes ${start}-${end}/${archive.length}`,
      });
      return void res.end(req.method === 'HEAD' ? undefined : archive.subarray(start, end + 1));
    }
    res.writeHead(200, { ...headers, 'content-length': archive.length });
    res.end(req.method === 'HEAD' ? undefined : archive);
  }

  // ---- control endpoints ---------------------------------------------------------------------------

  async #control(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    try {
      const body = req.method === 'POST' ? await readText(req) : '';
      const key = `${req.method} ${path}`;
      switch (key) {
        case 'GET /_emulator/health':
          return sendJson(res, 200, { ok: true });
        case 'GET /_emulator/counters':
          return sendJson(res, 200, this.#counters);
        case 'GET /_emulator/jobs':
          return sendJson(res, 200, this.jobs());
        case 'GET /_emulator/updates':
          return sendJson(res, 200, this.updates());
        case 'POST /_emulator/push':
          return sendJson(res, 200, this.push(pushRequestOf(body)));
        case 'GET /_emulator/faults':
          return sendJson(res, 200, this.faults());
        case 'POST /_emulator/faults': {
          const parsed = body ? (JSON.parse(body) as unknown) : [];
          const rules = Array.isArray(parsed) ? parsed : (parsed as { faults?: unknown }).faults;
          const seed = Array.isArray(parsed) ? undefined : (parsed as { seed?: unknown }).seed;
          if (!Array.isArray(rules)) throw new StatusError(400, 'expected [rules] or {"faults": [rules], "seed"?: n}');
          this.setFaults(rules as FaultRule[], typeof seed === 'number' ? seed : undefined);
          return sendJson(res, 200, { faults: this.faults() });
        }
        case 'POST /_emulator/reset':
          this.reset();
          return sendJson(res, 200, { ok: true });
        case 'POST /_emulator/keys': {
          // {"add": [keys], "revoke": [keys]}: a key rotation driven from outside the process.
          const { add = [], revoke = [] } = JSON.parse(body || '{}') as { add?: string[]; revoke?: string[] };
          for (const key of add) this.addKey(key);
          for (const key of revoke) this.revokeKey(key);
          return sendJson(res, 200, { ok: true });
        }
        case 'POST /_emulator/configure': {
          const patch = JSON.parse(body || '{}') as Record<string, unknown>;
          this.configure(pickSerializable(patch));
          return sendJson(res, 200, { ok: true });
        }
        default:
          return sendJson(res, 404, { error: `no control endpoint ${key}` });
      }
    } catch (err) {
      // A control body that is not JSON (JSON.parse's message) is the caller's mistake: 400.
      sendError(req, res, err instanceof StatusError ? err : new StatusError(400, (err as Error).message));
    }
  }

  // ---- helpers -------------------------------------------------------------------------------------

  #countOnClose(route: EmulatorRoute, res: ServerResponse): void {
    res.once('close', () => {
      const status = res.writableFinished ? String(res.statusCode) : 'reset';
      const byStatus = (this.#counters.calls[route] ??= {});
      byStatus[status] = (byStatus[status] ?? 0) + 1;
    });
  }

  /** An API route's JSON answer, shown to `onAnswer` first. */
  #answer(res: ServerResponse, route: AdminApiOperation, status: number, body: unknown): void {
    if (res.destroyed) return;
    this.options.onAnswer?.({ route, status, body });
    sendJson(res, status, body);
  }
}

function matchRoute(method: string, path: string): { route: AdminApiOperation; params: string[] } | undefined {
  const parts = path.split('/').slice(1).map(safeDecode);
  if (parts.some((p) => p === undefined || p === '')) return undefined;
  const p = parts as string[];
  if (p[0] === 'v2' && p[1] === 'agent' && p[3] === 'job') {
    if (p.length === 4 && method === 'POST') return { route: 'createAgentJob', params: [p[2]!] };
    if (p.length === 5 && method === 'GET') return { route: 'getAgentJob', params: [p[2]!, p[4]!] };
    if (p.length === 6 && p[5] === 'message' && method === 'POST')
      return { route: 'sendAgentMessage', params: [p[2]!, p[4]!] };
  }
  if (p[0] === 'v1' && p[1] === 'project' && p.length === 4) {
    if (p[2] === 'update' && method === 'POST') return { route: 'triggerUpdate', params: [p[3]!] };
    if (p[2] === 'update-status' && method === 'GET') return { route: 'getUpdateStatus', params: [p[3]!] };
  }
  if (p[0] === 'v1' && p[1] === 'static-export' && p[2] === 'jobs') {
    if (p.length === 3 && method === 'POST') return { route: 'startExport', params: [] };
    if (p.length === 4 && method === 'GET') return { route: 'getExport', params: [p[3]!] };
    if (p.length === 5 && p[4] === 'bundle' && method === 'POST') return { route: 'generateBundle', params: [p[3]!] };
  }
  return undefined;
}

/** A delay that does not keep the process alive (a closed emulator must not hold the test runner). */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function safeDecode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

async function readText(req: IncomingMessage): Promise<string> {
  return (await readBody(req, MAX_BODY)).toString('utf8');
}

function parseJsonObject(raw: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new StatusError(400, 'request body must be JSON');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new StatusError(400, 'request body must be a JSON object');
  return parsed as Record<string, unknown>;
}

function promptOf(raw: string): string {
  const { prompt } = parseJsonObject(raw);
  if (typeof prompt !== 'string' || prompt.length < 1)
    throw new StatusError(400, '"prompt" is required (a non-empty string)');
  return prompt;
}

function exportRequestOf(raw: string): StartExportRequest {
  const { domain, version, paths } = parseJsonObject(raw);
  if (typeof domain !== 'string' || !HOSTNAME.test(domain)) {
    throw new StatusError(400, '"domain" must be a bare hostname (no scheme, slash or path), e.g. docs.example.com');
  }
  if (version !== undefined && (typeof version !== 'string' || version === ''))
    throw new StatusError(400, '"version" must be a non-empty string');
  if (paths !== undefined && (!Array.isArray(paths) || paths.some((p) => typeof p !== 'string'))) {
    throw new StatusError(400, '"paths" must be an array of strings');
  }
  return {
    domain,
    ...(version !== undefined ? { version } : {}),
    ...(paths !== undefined ? { paths: paths as string[] } : {}),
  };
}

function pushRequestOf(raw: string): PushRequest {
  const { projectId, domain, ref, sha, message, filesChanged, author } = parseJsonObject(raw || '{}');
  const optionalString = (v: unknown): v is string | undefined => v === undefined || typeof v === 'string';
  if (typeof projectId !== 'string' || projectId === '') throw new StatusError(400, '"projectId" is required');
  if (!optionalString(domain) || !optionalString(ref) || !optionalString(message) || !optionalString(author))
    throw new StatusError(400, '"domain", "ref", "message" and "author" must be strings');
  if (sha !== undefined && (typeof sha !== 'string' || !/^[0-9a-f]{7,64}$/.test(sha)))
    throw new StatusError(400, '"sha" must be hex');
  return {
    projectId,
    ...(domain !== undefined ? { domain } : {}),
    ...(ref !== undefined ? { ref } : {}),
    ...(sha !== undefined ? { sha } : {}),
    ...(message !== undefined ? { message } : {}),
    ...(filesChanged !== undefined ? { filesChanged: filesChangedOf(filesChanged) } : {}),
    ...(author !== undefined ? { author } : {}),
  };
}

/** The documented filesChanged: {added?, modified?, removed?}, each a list of paths. */
function filesChangedOf(value: unknown): Partial<FilesChanged> {
  const isPaths = (v: unknown): v is string[] | undefined =>
    v === undefined || (Array.isArray(v) && v.every((p) => typeof p === 'string'));
  const lists = value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  if (!lists || !isPaths(lists.added) || !isPaths(lists.modified) || !isPaths(lists.removed))
    throw new StatusError(400, '"filesChanged" must be {"added"?, "modified"?, "removed"?}, each a list of paths');
  const { added, modified, removed } = lists;
  return {
    ...(added ? { added } : {}),
    ...(modified ? { modified } : {}),
    ...(removed ? { removed } : {}),
  };
}

/** Single byte range: "bytes=a-b", "bytes=a-", "bytes=-n". Multiple ranges are served whole (allowed by RFC 9110). */
function parseRange(header: string | undefined, size: number): [number, number] | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  let start: number;
  let end: number;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start >= size || start > end) return 'unsatisfiable';
  return [start, end];
}

function applyQuirks(body: unknown, quirks: ResponseQuirks): unknown {
  if (!quirks.numbersAsStrings && !quirks.extraFields && !quirks.activeStatusAlias && !quirks.runningStatusAlias)
    return body;
  const out = { ...(body as Record<string, unknown>) };
  if (quirks.numbersAsStrings) {
    for (const key of ['progress', 'pageCount', 'sizeBytes'])
      if (typeof out[key] === 'number') out[key] = String(out[key]);
  }
  if (quirks.extraFields) {
    out.organizationId = 'org_emulated';
    out.metadata = { emulator: true, tags: ['x'] };
    if (out.source && typeof out.source === 'object') out.source = { ...(out.source as object), branch: 'agent/fix' };
  }
  if (out.status === 'active' && quirks.activeStatusAlias && 'prLink' in out) out.status = quirks.activeStatusAlias;
  if (out.status === 'running' && quirks.runningStatusAlias) out.status = quirks.runningStatusAlias;
  return out;
}

const SERIALIZABLE_KEYS = [
  'quirks',
  'agentActiveMs',
  'model',
  'exportQueuedMs',
  'exportDurationMs',
  'exportTotalPages',
  'progressShape',
  'rateLimit',
  'updateQueuedMs',
  'updateBuildMs',
  'failingUpdateProjects',
  'missingProjects',
  'updateRateLimit',
  'retryAfterForm',
  'bundleTtlMs',
  'nonEnterpriseKeys',
  'revokedKeys',
  'validKeys',
  'readOnlyKeys',
  'ipAllowlist',
  'publicUrl',
  'logRequests',
] as const;

function pickSerializable(patch: Record<string, unknown>): Partial<EmulatorOptions> {
  const out: Record<string, unknown> = {};
  for (const key of SERIALIZABLE_KEYS) if (patch[key] !== undefined) out[key] = patch[key];
  return out as Partial<EmulatorOptions>;
}
