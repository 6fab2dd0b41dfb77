// test-lane: parallel
// AdminApiClient against the emulator: every operation, every error class, bundle links and archives; and
// every answer the emulator gives in this file checked against the platform's documentation
// (emulator/documented.ts), the liberal-parsing quirks excepted.
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as tar from 'tar';
import { AdminApiClient, type AdminApiClientOptions, type ApiCallEvent } from '../../src/api/client';
import {
  AdminApiError,
  ConflictError,
  InvalidRequestError,
  MalformedResponseError,
  NetworkError,
  NotFoundError,
  OutcomeUnknownError,
  PlanRequiredError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
} from '../../src/api/errors';
import { toApplicationFailure } from '../../src/activities/api-call';
import type { AdminApiOperation } from '../../src/api/types';
import {
  type EmulatorAnswer,
  type EmulatorHandle,
  DEFAULT_OPTIONS,
  DOCUMENTED_OPERATIONS,
  documentedAgentJob,
  documentedDeploymentUpdate,
  startEmulator,
  undocumentedAnswer,
} from '../../emulator';
import { freeLoopbackPort } from '../../src/observability/free-port';
import { waitFor } from '../../scripts/wait';

const KEY = 'mint_contract_test_key_8f3a9c';
const FREE_KEY = 'mint_free_plan_key_111';
const REVOKED_KEY = 'mint_revoked_key_SHOULD_NOT_LEAK_777';

// Controlled clock shared by emulator and client; starts on a whole second so HTTP-dates are exact.
let clock = Math.ceil(Date.now() / 1000) * 1000;
const now = (): number => clock;
const advance = (ms: number): void => {
  clock += ms;
};

let emu: EmulatorHandle;
let client: AdminApiClient;
const events: ApiCallEvent[] = [];
const warnings: string[] = [];

function makeClient(overrides: Partial<AdminApiClientOptions> = {}): AdminApiClient {
  return new AdminApiClient({
    baseUrl: emu.url,
    apiKey: KEY,
    now,
    logger: { warn: (m) => warnings.push(m) },
    onCall: (e) => events.push(e),
    timeouts: { connectMs: 1_000, headersMs: 2_000, bodyMs: 2_000, totalMs: 3_000 },
    ...overrides,
  });
}

async function rejectsWith<E extends AdminApiError>(
  promise: Promise<unknown>,
  cls: new (...a: never[]) => E,
): Promise<E> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof cls, `expected ${cls.name}, got ${(err as Error)?.name}: ${(err as Error)?.message}`);
    return err;
  }
  assert.fail(`expected ${cls.name}, but the call succeeded`);
}

const BASE = {
  now,
  agentActiveMs: 5_000,
  exportQueuedMs: 1_000,
  exportDurationMs: 10_000,
  exportTotalPages: 12,
  rateLimit: { limit: 100, windowMs: 3_600_000 },
  retryAfterForm: 'seconds' as const,
  bundleTtlMs: 60_000,
  nonEnterpriseKeys: [FREE_KEY],
  revokedKeys: [REVOKED_KEY],
  quirks: {},
  progressShape: 'linear' as const,
  updateRateLimit: { limit: 10, windowMs: 10_000 },
  failingUpdateProjects: [],
  missingProjects: [],
  readOnlyKeys: [],
};

/** Every answer of the file, and those that depart from the documentation. */
const answers: EmulatorAnswer[] = [];
const undocumented: string[] = [];

before(async () => {
  emu = await startEmulator({
    ...BASE,
    onAnswer: (answer) => {
      // The quirks are deliberate departures (numbers as strings, extra fields, unknown statuses).
      if (Object.keys(emu.emulator.options.quirks).length > 0) return;
      answers.push(answer);
      const found = undocumentedAnswer(answer.route, answer.status, answer.body);
      if (found) undocumented.push(found);
    },
  });
  client = makeClient();
});

after(async () => {
  await client.close();
  await emu.close();
});

beforeEach(() => {
  emu.reset();
  emu.configure(BASE);
  events.length = 0;
  warnings.length = 0;
});

describe('agent jobs', () => {
  test('create -> active, then completed with a PR link; follow-up keeps the PR', async () => {
    const job = await client.createAgentJob('proj-a', 'Document the new webhook');
    assert.equal(job.status, 'active');
    assert.equal(job.prLink, null);
    assert.match(job.source.repository ?? '', /^https:\/\/github\.com\//);
    assert.ok(job.model);
    assert.ok(!Number.isNaN(Date.parse(job.createdAt)));

    assert.equal((await client.getAgentJob('proj-a', job.id)).status, 'active');
    advance(5_000);
    const done = await client.getAgentJob('proj-a', job.id);
    assert.equal(done.status, 'completed');
    assert.match(done.prLink ?? '', /^https:\/\/github\.com\/[^/]+\/[^/]+\/pull\/\d+$/);

    const again = await client.sendAgentMessage('proj-a', job.id, 'Also fix the typo in the title');
    assert.equal(again.status, 'active');
    advance(5_000);
    assert.equal((await client.getAgentJob('proj-a', job.id)).prLink, done.prLink);
    assert.deepEqual(
      emu.jobs().map((j) => [j.projectId, j.prompt, j.messages]),
      [['proj-a', 'Document the new webhook', ['Also fix the typo in the title']]],
    );
    assert.deepEqual(emu.counters().agentJobsCreated, { 'proj-a': 1 });
    assert.deepEqual(
      events.map((e) => `${e.operation}:${e.status}`),
      ['createAgentJob:201', 'getAgentJob:200', 'getAgentJob:200', 'sendAgentMessage:200', 'getAgentJob:200'],
    );
  });

  test('prompt markers: no change, failed, archived', async () => {
    const noChange = await client.createAgentJob('p', 'check links [no-change]');
    const failed = await client.createAgentJob('p', 'do it [fail]');
    const archived = await client.createAgentJob('p', 'do it [archive]');
    advance(5_000);
    const a = await client.getAgentJob('p', noChange.id);
    assert.deepEqual([a.status, a.prLink], ['completed', null]);
    assert.equal((await client.getAgentJob('p', failed.id)).status, 'failed');
    const c = await client.getAgentJob('p', archived.id);
    assert.equal(c.status, 'archived');
    assert.ok(c.archivedAt);
  });

  test('400 on missing or empty prompt keeps the API text', async () => {
    const err = await rejectsWith(client.createAgentJob('p', ''), InvalidRequestError);
    assert.equal(err.status, 400);
    assert.match(err.message, /"prompt" is required/);
    assert.equal(err.retryable, false);
    const job = await client.createAgentJob('p', 'x');
    await rejectsWith(client.sendAgentMessage('p', job.id, ''), InvalidRequestError);
    assert.equal(emu.jobs().length, 1);
  });

  test('404 on unknown ids and on another project', async () => {
    await rejectsWith(client.getAgentJob('p', 'aj_missing'), NotFoundError);
    const job = await client.createAgentJob('p', 'x');
    await rejectsWith(client.getAgentJob('other', job.id), NotFoundError);
    await rejectsWith(client.sendAgentMessage('other', job.id, 'y'), NotFoundError);
    assert.equal(emu.counters().calls.getAgentJob?.['404'], 2);
  });

  test('429 shares one budget for creates and messages; Retry-After in seconds is accurate', async () => {
    emu.configure({ rateLimit: { limit: 3, windowMs: 10_000 } });
    const job = await client.createAgentJob('p', 'one');
    advance(1_000);
    await client.sendAgentMessage('p', job.id, 'two');
    advance(1_000);
    await client.createAgentJob('p', 'three');
    await client.createAgentJob('other-project', 'own budget');
    advance(500);
    const err = await rejectsWith(client.createAgentJob('p', 'four'), RateLimitedError);
    assert.equal(err.retryable, true);
    assert.equal(err.retryAfterMs, 8_000); // the first call (t=0) ages out at t=10 s; now t=2.5 s
    await rejectsWith(client.sendAgentMessage('p', job.id, 'five'), RateLimitedError);
    assert.equal(toApplicationFailure(err).nextRetryDelay, 8_000);
    advance(7_499);
    await rejectsWith(client.createAgentJob('p', 'six'), RateLimitedError);
    advance(1);
    await client.createAgentJob('p', 'seven'); // exactly when Retry-After said
    assert.equal(emu.counters().rateLimited, 3);
    assert.equal(emu.jobs().filter((j) => j.projectId === 'p').length, 3);
  });

  test('429 with Retry-After as an HTTP-date, and without Retry-After', async () => {
    emu.configure({ rateLimit: { limit: 1, windowMs: 30_000 }, retryAfterForm: 'http-date' });
    await client.createAgentJob('p', 'one');
    advance(4_000);
    const dated = await rejectsWith(client.createAgentJob('p', 'two'), RateLimitedError);
    assert.equal(dated.retryAfterMs, 26_000);
    emu.configure({ retryAfterForm: 'none' });
    const bare = await rejectsWith(client.createAgentJob('p', 'three'), RateLimitedError);
    assert.equal(bare.retryAfterMs, undefined);
    assert.equal(toApplicationFailure(bare).nextRetryDelay, undefined);
  });
});

describe('static export', () => {
  test('queued -> running (monotonic) -> completed, bundle, real tar.gz with one page per page', async () => {
    const job = await client.startExport({ domain: 'docs.example.com', version: 'v2' });
    assert.equal(job.status, 'queued');
    assert.equal(job.progress, 0);
    let last = { progress: 0, pageCount: 0 };
    advance(1_000);
    for (let i = 0; i < 9; i++) {
      advance(1_000);
      const s = await client.getExport(job.jobId);
      assert.equal(s.status, 'running');
      assert.ok(s.progress > last.progress && s.progress < 100, `progress ${s.progress}`);
      assert.ok(s.pageCount >= last.pageCount && s.pageCount < 12);
      last = s;
    }
    await rejectsWith(client.generateBundle(job.jobId), ConflictError);
    advance(1_000);
    const done = await client.getExport(job.jobId);
    assert.deepEqual([done.status, done.progress, done.pageCount], ['completed', 100, 12]);

    const bundle = await client.generateBundle(job.jobId);
    assert.equal(bundle.jobId, job.jobId);
    assert.ok(bundle.bundleUrl.startsWith(`${emu.url}/bundles/`));
    assert.equal(Date.parse(bundle.expiresAt), clock + 60_000);

    const response = await fetch(bundle.bundleUrl);
    assert.equal(response.status, 200);
    const bytes = Buffer.from(await response.arrayBuffer());
    assert.equal(bytes.length, bundle.sizeBytes);
    const dir = await mkdtemp(path.join(tmpdir(), 'bundle-'));
    try {
      const file = path.join(dir, 'b.tar.gz');
      await writeFile(file, bytes);
      const names: string[] = [];
      await tar.t({ file, onReadEntry: (e) => void names.push(e.path) });
      assert.equal(names.length, 12);
      assert.ok(names.every((n) => n.endsWith('.html')));
      assert.ok(names.includes('index.html'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }

    const head = await fetch(bundle.bundleUrl, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-length'), String(bundle.sizeBytes));
    const ranged = await fetch(bundle.bundleUrl, { headers: { range: 'bytes=0-9' } });
    assert.equal(ranged.status, 206);
    assert.equal(ranged.headers.get('content-range'), `bytes 0-9/${bundle.sizeBytes}`);
    assert.deepEqual(Buffer.from(await ranged.arrayBuffer()), bytes.subarray(0, 10));
  });

  test('paths become pages; expired link -> 403; regenerate gives a fresh link; bad signature -> 403', async () => {
    const job = await client.startExport({ domain: 'docs.example.com', paths: ['/quickstart', '/api/auth'] });
    advance(11_000);
    const first = await client.generateBundle(job.jobId);
    assert.equal((await fetch(first.bundleUrl)).status, 200);
    advance(60_000);
    const expired = await fetch(first.bundleUrl);
    assert.equal(expired.status, 403);
    await expired.arrayBuffer();
    const fresh = await client.generateBundle(job.jobId);
    assert.notEqual(fresh.bundleUrl, first.bundleUrl);
    assert.equal(fresh.sizeBytes, first.sizeBytes);
    const ok = await fetch(fresh.bundleUrl);
    assert.equal(ok.status, 200);
    await ok.arrayBuffer();
    const forged = await fetch(fresh.bundleUrl.replace(/sig=[^&]+/, 'sig=forged'));
    assert.equal(forged.status, 403);
    await forged.arrayBuffer();
    const c = emu.counters();
    assert.equal(c.downloadsOk, 2);
    assert.equal(c.downloadsDenied, 2);
    assert.equal(c.bundlesGenerated, 2);
  });

  test('failed export carries the error text', async () => {
    const job = await client.startExport({ domain: 'fail-docs.example.com' });
    advance(6_000);
    const s = await client.getExport(job.jobId);
    assert.equal(s.status, 'failed');
    assert.match(s.error ?? '', /^render failed: /);
    await rejectsWith(client.generateBundle(job.jobId), ConflictError);
  });

  test('400 on bad bodies, 404 on unknown jobs, 403 PlanRequired without Enterprise', async () => {
    for (const request of [
      { domain: 'https://docs.example.com' },
      { domain: 'docs.example.com/path' },
      { domain: '' },
    ]) {
      const err = await rejectsWith(client.startExport(request), InvalidRequestError);
      assert.match(err.message, /bare hostname/);
    }
    const badPaths = await rejectsWith(
      client.startExport({ domain: 'a.com', paths: [1 as unknown as string] }),
      InvalidRequestError,
    );
    assert.match(badPaths.message, /paths/);
    await rejectsWith(client.getExport('exp_nope'), NotFoundError);
    await rejectsWith(client.generateBundle('exp_nope'), NotFoundError);

    const free = makeClient({ apiKey: FREE_KEY });
    try {
      const err = await rejectsWith(free.startExport({ domain: 'docs.example.com' }), PlanRequiredError);
      assert.equal(err.code, 'PlanRequired');
      assert.equal(err.status, 403);
      assert.match(err.message, /static export needs an Enterprise plan/);
      assert.match(err.message, /not enabled for this organization/); // the API's own text is kept
      assert.equal(toApplicationFailure(err).nonRetryable, true);
      // Agent routes are not plan-gated.
      await free.createAgentJob('p', 'x');
    } finally {
      await free.close();
    }
    assert.equal(emu.counters().exportsStarted, 0);
  });
});

describe('deployment updates', () => {
  async function archiveNames(url: string): Promise<{ names: string[]; commit: string | null }> {
    const bytes = Buffer.from(await (await fetch(url)).arrayBuffer());
    const dir = await mkdtemp(path.join(tmpdir(), 'bundle-'));
    try {
      const file = path.join(dir, 'b.tar.gz');
      await writeFile(file, bytes);
      const names: string[] = [];
      await tar.x({ file, cwd: dir, onReadEntry: (e) => void names.push(e.path) });
      const commit = names.includes('commit.txt') ? await readFile(path.join(dir, 'commit.txt'), 'utf8') : null;
      return { names, commit: commit?.trim() ?? null };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  async function exportNow(domain: string): Promise<{ pageCount: number; names: string[]; commit: string | null }> {
    const job = await client.startExport({ domain });
    advance(11_000);
    const done = await client.getExport(job.jobId);
    assert.equal(done.status, 'completed');
    const bundle = await client.generateBundle(job.jobId);
    return { pageCount: done.pageCount, ...(await archiveNames(bundle.bundleUrl)) };
  }

  test('queued -> in_progress -> success builds the head at trigger time; exports after it publish it', async () => {
    emu.configure({ updateQueuedMs: 1_000, updateBuildMs: 5_000 });
    const domain = 'pub.example.com';
    const stale = await exportNow(domain);
    assert.equal(stale.commit, null);
    const filesChanged = { added: ['guides/new.mdx'], modified: ['index.mdx'] };
    const { sha } = emu.push({ projectId: 'p1', domain, message: 'Fix typo', filesChanged });

    const { statusId } = await client.triggerUpdate('p1');
    emu.push({ projectId: 'p1', sha: 'abcdef1' }); // after the trigger: not in this update
    const queued = await client.getUpdateStatus(statusId);
    assert.equal(queued.status, 'queued');
    assert.deepEqual(queued.commit, { sha, ref: 'main', message: 'Fix typo', filesChanged: 2 });
    assert.equal(queued.endedAt, null);
    advance(2_000);
    assert.equal((await client.getUpdateStatus(statusId)).status, 'in_progress');
    // An export started before success still exports the old content.
    assert.equal((await exportNow(domain)).commit, null);
    advance(4_000);
    const done = await client.getUpdateStatus(statusId);
    assert.equal(done.status, 'success');
    assert.equal(done.source, 'api');
    assert.ok(done.endedAt && done.logs.length >= 2);

    const fresh = await exportNow(domain);
    assert.equal(fresh.commit, sha);
    assert.equal(fresh.pageCount, stale.pageCount + 1, 'each published commit changes the page set');
    assert.ok(fresh.names.includes('commit.txt'));
    assert.ok(warnings.length === 0, warnings.join('\n'));
  });

  test('a failing build says why and publishes nothing; 404 on an unknown status id', async () => {
    emu.configure({ updateQueuedMs: 0, updateBuildMs: 1_000, failingUpdateProjects: ['p2'] });
    emu.push({ projectId: 'p2', domain: 'fail.example.com' });
    const { statusId } = await client.triggerUpdate('p2');
    advance(1_000);
    const failed = await client.getUpdateStatus(statusId);
    assert.equal(failed.status, 'failure');
    assert.match(failed.logs.join('\n'), /build failed/);
    assert.equal((await exportNow('fail.example.com')).commit, null);
    await rejectsWith(client.getUpdateStatus('upd_nope'), NotFoundError);
  });

  test('10 triggers per 10 s per organization: the 11th gets 429 with Retry-After', async () => {
    for (let i = 0; i < 10; i++) await client.triggerUpdate(`p${i}`);
    const err = await rejectsWith(client.triggerUpdate('p-over'), RateLimitedError);
    assert.equal(err.retryAfterMs, 10_000);
    assert.equal(emu.counters().updatesTriggered, 10);
    // Another organization (key) has its own budget.
    const other = makeClient({ apiKey: 'mint_other_org_key_123' });
    try {
      assert.ok((await other.triggerUpdate('p-other')).statusId);
    } finally {
      await other.close();
    }
    advance(10_000);
    assert.ok((await client.triggerUpdate('p-over')).statusId);
  });
});

describe('auth', () => {
  test('401 from the API; bad keys refused by the constructor without echoing them', async () => {
    const revoked = makeClient({ apiKey: REVOKED_KEY });
    try {
      const err = await rejectsWith(revoked.getExport('x'), UnauthorizedError);
      assert.equal(err.status, 401);
      assert.match(err.message, /revoked/);
      assert.ok(!err.message.includes(REVOKED_KEY));
    } finally {
      await revoked.close();
    }
    for (const bad of ['sk_live_123456789', '', 'mint_']) {
      assert.throws(
        () => new AdminApiClient({ baseUrl: emu.url, apiKey: bad }),
        (e: Error) => e.message.includes('ADMIN_API_KEY') && (bad.length < 6 || !e.message.includes(bad)),
      );
    }
  });

  test('a body over 1 MiB -> 413 {"error"} from the emulator, the rest of it unread', async () => {
    const res = await fetch(`${emu.url}/v1/static-export/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: `{"domain":"docs.example.com","pad":"${'x'.repeat(1024 * 1024)}"}`,
    });
    assert.equal(res.status, 413);
    assert.equal(res.headers.get('connection'), 'close');
    assert.deepEqual(await res.json(), { error: 'request body over 1048576 bytes' });
  });

  test('missing Authorization -> 401 {"error"} from the emulator', async () => {
    const res = await fetch(`${emu.url}/v1/static-export/jobs/x`);
    assert.equal(res.status, 401);
    assert.equal(typeof ((await res.json()) as { error: unknown }).error, 'string');
  });
});

describe('faults', () => {
  test('5xx: before and after commit; 503 carries Retry-After', async () => {
    emu.setFaults([{ route: 'getExport', kind: '500-before-commit', count: 1 }]);
    const e500 = await rejectsWith(client.getExport('x'), ServerError);
    assert.equal(e500.retryable, true);
    emu.setFaults([{ route: 'getAgentJob', kind: '503', count: 1, retryAfterSeconds: 2 }]);
    const e503 = await rejectsWith(client.getAgentJob('p', 'x'), ServerError);
    assert.equal(e503.retryAfterMs, 2_000);
    assert.equal(toApplicationFailure(e503).nextRetryDelay, 2_000);

    // startExport is retryable even after commit (a duplicate export is not user-visible).
    emu.setFaults([{ route: 'startExport', kind: '500-after-commit', count: 1 }]);
    const exp = await rejectsWith(client.startExport({ domain: 'docs.example.com' }), ServerError);
    assert.equal(exp.retryable, true);
    assert.equal(emu.counters().exportsStarted, 1);
  });

  test('creates and messages after commit -> OutcomeUnknown (non-retryable), naming project and time', async () => {
    emu.setFaults([{ route: 'createAgentJob', kind: '500-after-commit', count: 1 }]);
    const err = await rejectsWith(client.createAgentJob('proj-x', 'write the changelog'), OutcomeUnknownError);
    assert.equal(err.retryable, false);
    assert.equal(err.outcomeUnknown, true);
    assert.match(err.message, /proj-x/);
    assert.match(err.message, /pull request/);
    assert.ok(err.message.includes(new Date(clock).toISOString()));
    assert.ok(err.cause instanceof ServerError);
    assert.equal(emu.jobs().filter((j) => j.prompt === 'write the changelog').length, 1);
    const failure = toApplicationFailure(err, 'createAgentJob');
    assert.equal(failure.type, 'OutcomeUnknown');
    assert.equal(failure.nonRetryable, true);

    emu.setFaults([{ route: 'createAgentJob', kind: 'reset-after-commit', count: 1 }]);
    await rejectsWith(client.createAgentJob('proj-x', 'reset me'), OutcomeUnknownError);
    assert.equal(emu.jobs().filter((j) => j.prompt === 'reset me').length, 1);

    emu.setFaults([{ route: 'createAgentJob', kind: 'non-json', count: 1 }]);
    const nonJson = await rejectsWith(client.createAgentJob('proj-x', 'html please'), OutcomeUnknownError);
    assert.ok(nonJson.cause instanceof MalformedResponseError);

    const job = emu.jobs()[0]!;
    emu.setFaults([{ route: 'sendAgentMessage', kind: '500-after-commit', count: 1 }]);
    const msg = await rejectsWith(client.sendAgentMessage('proj-x', job.id, 'more'), OutcomeUnknownError);
    assert.match(msg.message, new RegExp(job.id));
    assert.equal(emu.counters().agentMessages, 1);
  });

  test('reset: retryable for GETs, OutcomeUnknown for creates (the client cannot tell when)', async () => {
    emu.setFaults([{ route: 'getAgentJob', kind: 'reset-before-commit', count: 1 }]);
    const reset = await rejectsWith(client.getAgentJob('p', 'x'), NetworkError);
    assert.equal(reset.retryable, true);
    emu.setFaults([{ route: 'createAgentJob', kind: 'reset-before-commit', count: 1 }]);
    await rejectsWith(client.createAgentJob('p', 'never created'), OutcomeUnknownError);
    assert.equal(emu.jobs().length, 0);
    assert.equal(emu.counters().calls.createAgentJob?.reset, 1);
  });

  test('connection refused is safe: retryable NetworkError even for creates', async () => {
    const port = await freeLoopbackPort();
    const dead = makeClient({ baseUrl: `http://127.0.0.1:${port}` });
    try {
      const err = await rejectsWith(dead.createAgentJob('p', 'x'), NetworkError);
      assert.equal(err.retryable, true);
      assert.match(err.message, /ECONNREFUSED/);
    } finally {
      await dead.close();
    }
    assert.ok(events.some((e) => e.status === 'NetworkError'));
  });

  test('slow -> Timeout for GETs; for creates OutcomeUnknown, and the job does get created', async () => {
    // undici's timers tick every ~0.5 s, so a 300 ms headers timeout fires within ~1 s.
    const quick = makeClient({ timeouts: { headersMs: 300, totalMs: 5_000 } });
    try {
      emu.setFaults([{ route: 'getExport', kind: 'slow', count: 1, delayMs: 2_500 }]);
      const t = await rejectsWith(quick.getExport('x'), TimeoutError);
      assert.equal(t.retryable, true);
      assert.match(t.message, /UND_ERR_HEADERS_TIMEOUT/);
      // Creates use fresh connections (pipelining 0), where undici arms no headers timer: the
      // overall deadline is what bounds them.
      const quickCreate = makeClient({ timeouts: { totalMs: 400 } });
      emu.setFaults([{ route: 'createAgentJob', kind: 'slow', count: 1, delayMs: 800 }]);
      await rejectsWith(quickCreate.createAgentJob('p', 'slow create'), OutcomeUnknownError).finally(() =>
        quickCreate.close(),
      );
      await waitFor(() => emu.jobs().some((j) => j.prompt === 'slow create'), {
        what: 'the slow create to commit',
        timeoutMs: 5_000,
        intervalMs: 20,
      });
      // The overall deadline applies too.
      const total = makeClient({ timeouts: { headersMs: 5_000, totalMs: 300 } });
      try {
        emu.setFaults([{ route: 'getAgentJob', kind: 'slow', count: 1, delayMs: 800 }]);
        await rejectsWith(total.getAgentJob('p', 'x'), TimeoutError);
      } finally {
        await total.close();
      }
    } finally {
      await quick.close();
    }
  });

  test('non-JSON 200 -> MalformedResponse (retryable) for GETs and startExport', async () => {
    emu.setFaults([{ route: 'getExport', kind: 'non-json', count: 1 }]);
    const job = await client.startExport({ domain: 'docs.example.com' });
    const err = await rejectsWith(client.getExport(job.jobId), MalformedResponseError);
    assert.equal(err.retryable, true);
    assert.match(err.message, /not JSON/);
    emu.setFaults([{ route: 'startExport', kind: 'non-json', count: 1 }]);
    await rejectsWith(client.startExport({ domain: 'docs.example.com' }), MalformedResponseError);
  });

  test('injected 429 and probabilistic faults are reproducible with a seed', async () => {
    emu.setFaults([{ route: 'getAgentJob', kind: '429', count: 1, retryAfterSeconds: 3 }]);
    const err = await rejectsWith(client.getAgentJob('p', 'x'), RateLimitedError);
    assert.equal(err.retryAfterMs, 3_000);

    const run = async (): Promise<string> => {
      emu.setFaults([{ route: 'getExport', kind: '500-before-commit', probability: 0.5 }], 42);
      const outcomes: string[] = [];
      for (let i = 0; i < 16; i++) {
        outcomes.push(
          await client.getExport('exp_x').then(
            () => 'ok',
            (e: AdminApiError) => e.code,
          ),
        );
      }
      return outcomes.join(',');
    };
    const first = await run();
    assert.equal(await run(), first);
    assert.ok(first.includes('ServerError') && first.includes('NotFound'));
  });

  test('faults, counters and reset over HTTP', async () => {
    const set = await fetch(`${emu.url}/_emulator/faults`, {
      method: 'POST',
      body: JSON.stringify({ faults: [{ route: 'getExport', kind: '500-before-commit', count: 1 }] }),
    });
    assert.equal(set.status, 200);
    await set.arrayBuffer();
    await rejectsWith(client.getExport('x'), ServerError);
    await rejectsWith(client.getExport('x'), NotFoundError);
    const counters = (await (await fetch(`${emu.url}/_emulator/counters`)).json()) as {
      calls: Record<string, Record<string, number>>;
    };
    assert.deepEqual(counters.calls.getExport, { '500': 1, '404': 1 });
    const bad = await fetch(`${emu.url}/_emulator/faults`, {
      method: 'POST',
      body: JSON.stringify([{ route: 'x', kind: 'y' }]),
    });
    assert.equal(bad.status, 400);
    await bad.arrayBuffer();
    const reset = await fetch(`${emu.url}/_emulator/reset`, { method: 'POST' });
    assert.equal(reset.status, 200);
    await reset.arrayBuffer();
    assert.deepEqual(emu.counters().calls, {});
  });
});

describe('liberal parsing', () => {
  test('numeric strings, unknown fields and unknown statuses are accepted; each unknown status logged once', async () => {
    emu.configure({
      quirks: {
        numbersAsStrings: true,
        extraFields: true,
        activeStatusAlias: 'thinking',
        runningStatusAlias: 'rendering',
      },
    });
    const job = await client.createAgentJob('p', 'x');
    assert.equal(job.status, 'thinking');
    assert.equal((await client.getAgentJob('p', job.id)).status, 'thinking');
    const exp = await client.startExport({ domain: 'docs.example.com' });
    advance(3_000);
    const s1 = await client.getExport(exp.jobId);
    advance(3_000);
    const s2 = await client.getExport(exp.jobId);
    assert.equal(s1.status, 'rendering');
    assert.equal(typeof s2.progress, 'number');
    assert.ok(s2.progress > s1.progress);
    assert.equal(typeof s2.pageCount, 'number');
    advance(10_000);
    const bundle = await client.generateBundle(exp.jobId);
    assert.equal(typeof bundle.sizeBytes, 'number');
    assert.ok(!('organizationId' in bundle));
    assert.equal(warnings.length, 2, warnings.join('\n'));
    assert.match(warnings[0]!, /unknown agent job status "thinking"/);
    assert.match(warnings[1]!, /unknown static export status "rendering"/);
  });
});

describe('cancellation', () => {
  test('an aborted signal rejects with its reason, not an AdminApiError', async () => {
    emu.setFaults([{ route: 'getExport', kind: 'slow', count: 1, delayMs: 1_000 }]);
    const controller = new AbortController();
    const reason = new Error('activity cancelled');
    const started = Date.now();
    const call = client.getExport('x', { signal: controller.signal });
    setTimeout(() => controller.abort(reason), 50);
    await assert.rejects(call, (e) => e === reason);
    assert.ok(Date.now() - started < 900);
  });
});

describe('secrets', () => {
  test('the key never appears in errors, failures, logs or metrics of failing calls', async () => {
    const lines: string[] = [];
    const originals = { warn: console.warn, error: console.error, log: console.log, info: console.info };
    for (const name of ['warn', 'error', 'log', 'info'] as const) {
      console[name] = (...args: unknown[]) => void lines.push(args.map(String).join(' '));
    }
    const secretEvents: ApiCallEvent[] = [];
    const revoked = new AdminApiClient({
      baseUrl: emu.url,
      apiKey: REVOKED_KEY,
      timeouts: { headersMs: 300, totalMs: 1_000 },
      onCall: (e) => secretEvents.push(e),
    });
    const withKey = new AdminApiClient({
      baseUrl: emu.url,
      apiKey: KEY,
      timeouts: { headersMs: 300, totalMs: 1_000 },
      onCall: (e) => secretEvents.push(e),
    });
    const errors: unknown[] = [];
    try {
      emu.configure({ quirks: { activeStatusAlias: `odd ${KEY}` } });
      await withKey.createAgentJob('p', 'x'); // unknown status echoing the key -> a log line
      for (const attempt of [
        () => revoked.createAgentJob('p', 'x'),
        () => revoked.getExport('x'),
        () => withKey.getExport('missing'),
      ]) {
        await attempt().catch((e: unknown) => errors.push(e));
      }
      for (const [route, kind] of [
        ['createAgentJob', '500-after-commit'],
        ['createAgentJob', 'reset-after-commit'],
        ['createAgentJob', 'slow'],
        ['getExport', 'non-json'],
      ] as const) {
        emu.setFaults([{ route, kind, count: 1, delayMs: 1_200 }]);
        await (route === 'createAgentJob' ? withKey.createAgentJob('p', 'y') : withKey.getExport('missing')).catch(
          (e: unknown) => errors.push(e),
        );
      }
    } finally {
      Object.assign(console, originals);
      await revoked.close();
      await withKey.close();
    }
    assert.equal(errors.length, 7);
    const dump = (e: unknown, depth = 0): string => {
      if (!(e instanceof Error) || depth > 5) return String(e);
      return [e.name, e.message, e.stack, JSON.stringify(e), dump(e.cause, depth + 1)].join('\n');
    };
    for (const err of errors) {
      assert.ok(err instanceof AdminApiError);
      const failure = toApplicationFailure(err, 'op');
      const text = [dump(err), dump(failure), JSON.stringify(failure), JSON.stringify(failure.details)].join('\n');
      for (const secret of [KEY, REVOKED_KEY, 'SHOULD_NOT_LEAK', 'contract_test_key']) {
        assert.ok(!text.includes(secret), `${err.code} leaked ${secret}`);
      }
    }
    assert.ok(
      lines.some((l) => l.includes('unknown agent job status')),
      'the unknown status was logged',
    );
    const logged = lines.join('\n') + JSON.stringify(secretEvents);
    assert.ok(!logged.includes(KEY) && !logged.includes(REVOKED_KEY));
  });
});

describe('answers as documented (emulator/documented.ts, from the platform OpenAPI documents)', () => {
  const READ_ONLY_KEY = 'mint_read_only_key_222';
  const OTHER_ORG_KEY = 'mint_other_org_key_333';

  /** One call straight to the emulator (the client would turn errors into classes): status and JSON body. */
  async function call(
    method: 'GET' | 'POST',
    path: string,
    options: { key?: string; body?: unknown } = {},
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${emu.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${options.key ?? KEY}`, 'content-type': 'application/json' },
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  test('every operation: its success in each state and each documented error, bodies as documented', async () => {
    const from = answers.length;
    emu.configure({
      rateLimit: { limit: 3, windowMs: 60_000 },
      updateRateLimit: { limit: 2, windowMs: 10_000 },
      updateQueuedMs: 1_000,
      updateBuildMs: 2_000,
      readOnlyKeys: [READ_ONLY_KEY],
      missingProjects: ['gone'],
      failingUpdateProjects: ['broken'],
    });

    // Agent jobs: active, then completed, failed and archived; 400, 404 and 429.
    const agent = '/v2/agent/doc-p/job';
    const jobs = [];
    for (const prompt of ['Document the webhook', 'x [fail]', 'x [archive]'])
      jobs.push((await call('POST', agent, { body: { prompt } })).body);
    const jobPath = `${agent}/${String(jobs[0]!.id)}`;
    await call('POST', agent, { body: { prompt: '' } });
    await call('POST', agent, { body: { prompt: 'one too many' } });
    await call('GET', `${agent}/aj_missing`);
    await call('POST', `${agent}/aj_missing/message`, { body: { prompt: 'more' } });
    await call('POST', `${jobPath}/message`, { body: { prompt: '' } });
    await call('POST', `${jobPath}/message`, { body: { prompt: 'over the budget' } });
    advance(5_000);
    for (const job of jobs) await call('GET', `${agent}/${String(job.id)}`);
    advance(60_000);
    await call('POST', `${jobPath}/message`, { body: { prompt: 'Also the changelog' } });

    // Static export: queued, running, completed and failed; 400, 401, 403, 404 and 409.
    const exports = '/v1/static-export/jobs';
    const exp = (await call('POST', exports, { body: { domain: 'doc.example.com' } })).body;
    const failed = (await call('POST', exports, { body: { domain: 'fail-doc.example.com' } })).body;
    await call('POST', exports, { body: { domain: 'https://doc.example.com' } });
    await call('POST', exports, { key: REVOKED_KEY, body: { domain: 'doc.example.com' } });
    await call('POST', exports, { key: FREE_KEY, body: { domain: 'doc.example.com' } });
    await call('POST', `${exports}/${String(exp.jobId)}/bundle`);
    advance(3_000);
    await call('GET', `${exports}/${String(exp.jobId)}`);
    advance(10_000);
    for (const job of [exp, failed]) await call('GET', `${exports}/${String(job.jobId)}`);
    await call('POST', `${exports}/${String(exp.jobId)}/bundle`);
    for (const key of [KEY, REVOKED_KEY]) {
      await call('GET', `${exports}/exp_missing`, { key });
      await call('POST', `${exports}/exp_missing/bundle`, { key });
    }

    // Deployments: queued, in_progress, success and failure; 401, 403, 404 and 429.
    const filesChanged = { added: ['guides/webhooks.mdx'], modified: ['docs.json'], removed: ['old.mdx'] };
    emu.push({ projectId: 'doc-p', message: 'Merge pull request #7', filesChanged, author: 'Jane Doe' });
    const update = (await call('POST', '/v1/project/update/doc-p')).body;
    const broken = (await call('POST', '/v1/project/update/broken')).body;
    await call('POST', '/v1/project/update/doc-p');
    await call('POST', '/v1/project/update/gone', { key: OTHER_ORG_KEY });
    await call('POST', '/v1/project/update/doc-p', { key: READ_ONLY_KEY });
    await call('POST', '/v1/project/update/doc-p', { key: REVOKED_KEY });
    const statusOf = (id: unknown, key = KEY) => call('GET', `/v1/project/update-status/${String(id)}`, { key });
    await statusOf(update.statusId);
    advance(1_500);
    await statusOf(update.statusId);
    advance(2_000);
    const success = (await statusOf(update.statusId)).body;
    await statusOf(broken.statusId);
    await statusOf('upd_missing');
    await statusOf(update.statusId, REVOKED_KEY);

    const got = answers.slice(from);
    for (const [operation, documented] of Object.entries(DOCUMENTED_OPERATIONS)) {
      const statuses = new Set(got.filter((a) => a.route === operation).map((a) => a.status));
      for (const status of [documented.success.status, ...documented.errors])
        assert.ok(statuses.has(status), `${operation} answered ${status} in this test`);
    }
    const states = (...routes: AdminApiOperation[]) =>
      new Set(got.filter((a) => routes.includes(a.route) && a.status < 300).map((a) => (a.body as Status).status));
    type Status = { status?: string };
    assert.deepEqual(states('createAgentJob', 'getAgentJob'), new Set(['active', 'completed', 'failed', 'archived']));
    assert.deepEqual(states('startExport', 'getExport'), new Set(['queued', 'running', 'completed', 'failed']));
    assert.deepEqual(states('getUpdateStatus'), new Set(['queued', 'in_progress', 'success', 'failure']));
    assert.deepEqual(undocumented, []);

    // Every documented field the emulator knows: an agent job always, a finished update all of them.
    const agentFields = Object.keys(documentedAgentJob.shape).sort();
    for (const a of got.filter((a) => a.route.includes('Agent') && a.status < 300))
      assert.deepEqual(Object.keys(a.body as object).sort(), agentFields);
    assert.deepEqual(Object.keys(success).sort(), Object.keys(documentedDeploymentUpdate.shape).sort());
    assert.deepEqual((success.commit as { filesChanged: unknown }).filesChanged, filesChanged);
    assert.deepEqual(success.author, { name: 'Jane Doe' });
    // ... and the client reads it.
    const read = await client.getUpdateStatus(String(update.statusId));
    assert.equal(read.status, 'success');
    assert.equal(read.commit?.filesChanged, 3);
  });
});

test('emulator defaults are the documented ones', () => {
  assert.equal(DEFAULT_OPTIONS.port, 4010);
  assert.equal(DEFAULT_OPTIONS.host, '127.0.0.1');
  assert.deepEqual(DEFAULT_OPTIONS.rateLimit, { limit: 100, windowMs: 3_600_000 });
  assert.equal(DEFAULT_OPTIONS.bundleTtlMs, 3_600_000);
});

// Last: every answer of every test above, the liberal-parsing quirks excepted.
test('every answer the emulator gave in this file is as the platform documents it', () => {
  const routes = new Set(answers.map((a) => a.route));
  assert.deepEqual([...routes].sort(), Object.keys(DOCUMENTED_OPERATIONS).sort(), 'every operation answered');
  assert.deepEqual(undocumented, []);
});
