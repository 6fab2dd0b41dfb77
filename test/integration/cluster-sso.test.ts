// test-lane: cluster-alone (switches the shared cluster to sign-on and back)
// Sign-on and roles end to end on the production-shaped cluster: this file switches the shared cluster
// to `npm run cluster -- --sso` (the OpenID provider starts; the server and the UI server restart with
// the JWT authorizer and the login), runs the worker process and the CLI as services with the
// `export` lines the cluster prints, and checks in headless Chromium what each role may do: the reader
// logs in and reads a decoded prompt and PR link, and the Web UI's terminate is refused; the writer
// terminates; a person with no role sees no workflow. The codec server refuses a request without a
// token, with an expired one and with one signed by another key. Service tokens live a few seconds, so
// the worker runs across several expiries. The waits for those expiries run beside the other tests: a
// token taken first is refused at the end of the codec test, and the worker's second job comes once
// three lifetimes have passed since its first, after the browser tests. The cluster always goes back
// to plain mode at the end.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate, createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SignJWT, decodeJwt, generateKeyPair } from 'jose';
import { Agent, fetch as undiciFetch } from 'undici';
import { type BrowserContext, type Page, chromium } from 'playwright-core';
import { parse, stringify } from 'yaml';
import { type EmulatorHandle, startEmulator } from '../../emulator';
import { type ClusterComponent, type EnsureResult, ensureCluster, stopCluster } from '../../scripts/cluster/control';
import { CLUSTER_ADDRESS, CLUSTER_FILES, CLUSTER_UI_URL } from '../../scripts/cluster/layout';
import { TLS_FILES } from '../../scripts/cluster/tls';
import { SSO_FILES, serviceEnv, serviceToken } from '../../scripts/cluster/sso';
import { CHROMIUM_PATH } from '../../scripts/test-setup';
import { defaultPayloadConverter } from '@temporalio/common';
import { payloadEncryption } from '../../src/codec';
import { CLOCK_TOLERANCE_SECONDS } from '../../src/codec/oidc-tokens';
import { connectClient } from '../../src/connection';
import { type Directory, hashPassword } from '../../sso-provider/directory';
import { WorkerProcess } from '../chaos/helpers';
import { keepScreenshot } from '../helpers/browser';
import { clusterSkipReason, uniqueTaskQueue, waitFor } from '../helpers/temporal';

const ROOT = path.resolve(__dirname, '../..');
const KEY = 'mint_cluster_sso_e2e_key_0123456789';
const NAMESPACE = 'default';
/** Service tokens' lifetime in this file: the worker's expires several times while it runs. */
const SERVICE_TOKEN_TTL_S = 8;
const UI_TIMEOUT_MS = 20_000;
const ARTIFACTS = path.resolve(ROOT, 'test-artifacts/cluster-sso');
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-sync'];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const run = (args: string[], env: NodeJS.ProcessEnv, timeout = 120_000): Promise<Run> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/starter.ts', ...args],
      { cwd: ROOT, env, timeout },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
const said = (r: Run) =>
  `exit ${r.code}; stderr: ${r.stderr.trim() || '(none)'}; stdout: ${r.stdout.trim() || '(none)'}`;
const lastJson = (text: string) => JSON.parse(text.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;

/** People and a reader service this file adds to the directory (the provider re-reads it on change). */
const PEOPLE = {
  'sso-test-reader': { role: 'reader', password: `r-${process.pid}-${Date.now()}` },
  'sso-test-writer': { role: 'writer', password: `w-${process.pid}-${Date.now()}` },
  'sso-test-nobody': { role: undefined, password: `n-${process.pid}-${Date.now()}` },
} as const;
const READER_SERVICE = 'sso-test-reader-service';

function addToDirectory(): void {
  const directory = parse(readFileSync(SSO_FILES.directory, 'utf8')) as Directory;
  const ours = (name: string) => name.startsWith('sso-test-');
  directory.users = directory.users.filter((u) => !ours(u.username));
  directory.services = directory.services.filter((s) => !ours(s.clientId));
  for (const [username, { role, password }] of Object.entries(PEOPLE))
    directory.users.push({
      username,
      name: username,
      email: `${username}@docs-admin.localhost`,
      password: hashPassword(password),
      // As the cluster's people: the Web UI's cluster-scoped reads need a read of the whole cluster.
      roles: role ? { [NAMESPACE]: role, 'temporal-system': 'reader' } : {},
    });
  const secretFile = `${READER_SERVICE}.secret`;
  writeFileSync(path.join(path.dirname(SSO_FILES.directory), secretFile), `reader-secret-${process.pid}\n`, {
    mode: 0o600,
  });
  directory.services.push({ clientId: READER_SERVICE, secretFile, roles: { [NAMESPACE]: 'reader' } });
  writeFileSync(SSO_FILES.directory, stringify(directory), { mode: 0o600 });
}

/**
 * The codec server's certificate as a browser of the cluster's operator trusts it: this one certificate
 * (its public key's SHA-256), not every certificate error.
 */
function trustCodecCertificate(): string {
  const spki = new X509Certificate(readFileSync(TLS_FILES.serverCert)).publicKey.export({
    type: 'spki',
    format: 'der',
  });
  return `--ignore-certificate-errors-spki-list=${createHash('sha256').update(spki).digest('base64')}`;
}

/**
 * Headless Chromium with a profile of its own, signed in as `username` through the provider's form; it lands
 * on the workflows, or (a person the server refuses) back on the UI's login page.
 */
async function signIn(
  username: keyof typeof PEOPLE,
  { landsOnLogin = false } = {},
): Promise<{ page: Page; close(): Promise<void> }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'docs-admin-sso-chromium-'));
  const context: BrowserContext = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [...CHROMIUM_ARGS, trustCodecCertificate()],
    viewport: { width: 1600, height: 1000 },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(UI_TIMEOUT_MS);
  await page.goto(`${CLUSTER_UI_URL}/auth/sso?returnUrl=${encodeURIComponent(`/namespaces/${NAMESPACE}/workflows`)}`);
  await page.locator('input[name=username]').fill(username);
  await page.locator('input[name=password]').fill(PEOPLE[username].password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const landing = landsOnLogin ? '/login' : '/namespaces/';
  await page.waitForURL((url) => url.origin === CLUSTER_UI_URL && url.pathname.startsWith(landing));
  return {
    page,
    async close() {
      await context.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const workflowUrl = (workflowId: string) =>
  `${CLUSTER_UI_URL}/namespaces/${NAMESPACE}/workflows/${encodeURIComponent(workflowId)}`;

/** Waits until the page shows every text (the UI loads and decodes asynchronously). */
async function expectTexts(page: Page, texts: string[], what: string): Promise<void> {
  let last = '';
  try {
    await waitFor(
      async () => {
        last = await page.locator('body').innerText();
        return texts.every((text) => last.includes(text));
      },
      { timeoutMs: UI_TIMEOUT_MS, intervalMs: 300, what },
    );
  } catch (err) {
    throw new Error(`${what}: missing ${JSON.stringify(texts.filter((t) => !last.includes(t)))} in:\n${last}`, {
      cause: err,
    });
  }
}

/**
 * What a person does: More Actions, Terminate, a reason, Terminate (the layouts render the menu twice).
 * The UI renders the menu once the workflow's description has loaded; on a loaded machine that first
 * load can miss, and a person then reloads the page, as this does once. A second miss keeps a screenshot
 * and says what the page showed.
 */
async function terminateInUi(page: Page, who: string): Promise<void> {
  const moreActions = page.locator('button:visible', { hasText: 'More Actions' }).first();
  try {
    await moreActions.waitFor({ timeout: UI_TIMEOUT_MS });
  } catch {
    await page.reload();
    try {
      await moreActions.waitFor({ timeout: UI_TIMEOUT_MS });
    } catch (err) {
      await keepScreenshot(page, path.join(ARTIFACTS, `${who}-no-more-actions.png`), { fullPage: true });
      const shown = (await page.locator('body').innerText()).slice(0, 2000);
      throw new Error(`no More Actions button for the ${who} after a reload; the page showed:\n${shown}`, {
        cause: err,
      });
    }
  }
  await moreActions.click();
  await page.locator('[data-testid=terminate-button]:visible').click();
  const modal = page.locator('[data-testid=terminate-confirmation-modal]:visible');
  await modal.locator('input, textarea').first().fill('sign-on test');
  await modal.locator('button', { hasText: 'Terminate' }).click();
}

describe('sign-on and roles (npm run cluster -- --sso)', { skip: clusterSkipReason() }, () => {
  const taskQueue = uniqueTaskQueue('sso');
  const tag = taskQueue.slice(-12);
  const prompt = `Document sign-on ${tag}`;
  let emu: EmulatorHandle | undefined;
  let worker: WorkerProcess | undefined;
  let ensured: EnsureResult;
  let startedHere: ClusterComponent[] = [];
  let doneJob: { workflowId: string; prLink: string } | undefined;
  /** When the first job completed: the second waits three token lifetimes from here. */
  let doneJobAt = 0;
  let longJob: string | undefined;
  /** A reader service's token the codec server accepted at the start: refused once it has expired. */
  let firstToken: string | undefined;
  /** A job's status as the reader service reads it. */
  const statusOf = async (workflowId: string): Promise<string | undefined> => {
    const client = await connectClient({ ...base(), ...serviceEnv(READER_SERVICE) });
    try {
      return (await client.workflow.getHandle(workflowId).describe()).status.name;
    } finally {
      await client.connection.close();
    }
  };
  const base = (): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH ?? '',
    HOME: '/nonexistent',
    TEMPORAL_ADDRESS: CLUSTER_ADDRESS,
    TEMPORAL_TASK_QUEUE: taskQueue,
    PAYLOAD_ENCRYPTION_KEYS_FILE: CLUSTER_FILES.payloadKeys,
  });
  const asCli = (): NodeJS.ProcessEnv => ({ ...base(), ...ensured.sso!.cli });
  /** The codec server's /decode of one encrypted payload (the prompt), with this Authorization header. */
  const decode = async (authorization?: string) => {
    const [encoded] = await payloadEncryption(CLUSTER_FILES.payloadKeys).codec.encode([
      defaultPayloadConverter.toPayload(prompt),
    ]);
    const base64 = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('base64');
    const metadata = Object.entries(encoded?.metadata ?? {}).map(([name, value]) => [name, base64(value)]);
    const body = JSON.stringify({
      payloads: [{ metadata: Object.fromEntries(metadata), data: base64(encoded?.data) }],
    });
    // With sign-on the codec server serves HTTPS with the frontend's certificate, of the cluster's CA.
    const dispatcher = new Agent({ connect: { ca: readFileSync(TLS_FILES.caCert) } });
    try {
      const response = await undiciFetch(`${ensured.codecUrl}/decode`, {
        dispatcher,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-namespace': NAMESPACE,
          ...(authorization ? { authorization } : {}),
        },
        body,
      });
      return { status: response.status, text: await response.text() };
    } finally {
      await dispatcher.close();
    }
  };

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    startedHere = (await ensureCluster()).started;
    process.env.SSO_SERVICE_TOKEN_TTL_SECONDS = String(SERVICE_TOKEN_TTL_S);
    ensured = await ensureCluster({ sso: true });
    assert.ok(ensured.sso, 'the cluster runs with sign-on');
    addToDirectory();
    emu = await startEmulator({
      agentActiveMs: 300,
      durationFor: (kind, key) => (kind === 'agent' && key.includes('[long]') ? 600_000 : undefined),
    });
    worker = await WorkerProcess.start({
      env: { ...base(), ...ensured.sso.worker, ADMIN_API_URL: emu.url, ADMIN_API_KEY: KEY, METRICS_PORT: '0' },
    });
  });

  after(async () => {
    await worker?.kill();
    await emu?.close();
    delete process.env.SSO_SERVICE_TOKEN_TTL_SECONDS;
    const plain = await ensureCluster({ sso: false });
    assert.equal(plain.sso, undefined);
    if (startedHere.length > 0 && process.env.DOCS_ADMIN_KEEP_CLUSTER !== '1')
      await stopCluster(() => undefined, startedHere);
  });

  test("the codec server decodes for a reader service's token", async () => {
    firstToken = await serviceToken(READER_SERVICE);
    const ok = await decode(`Bearer ${firstToken}`);
    assert.equal(ok.status, 200, ok.text);
    assert.match(ensured.codecUrl, /^https:/);
    const [decoded] = (JSON.parse(ok.text) as { payloads: { data: string }[] }).payloads;
    assert.equal(JSON.parse(Buffer.from(decoded?.data ?? '', 'base64').toString()), prompt);
  });

  test('the worker and the CLI run an agent job as services', async () => {
    const first = await run(['agent', '--project', `sso-${tag}`, '--prompt', prompt, '--wait', '--json'], asCli());
    assert.equal(first.code, 0, said(first));
    const job = lastJson(first.stdout);
    assert.equal(job.status, 'completed');
    doneJob = { workflowId: String(job.workflowId), prLink: String(job.prLink) };
    doneJobAt = Date.now();
    assert.match(doneJob.prLink, /\/pull\/\d+$/);
  });

  test('without a token, and as a reader, the CLI is refused with one line naming the role', async () => {
    assert.ok(doneJob);
    // Three CLI processes side by side: none depends on another.
    const [nobody, reader, status] = await Promise.all([
      run(['agent', '--project', `sso-${tag}`, '--prompt', 'x'], base()),
      run(['agent', '--project', `sso-${tag}`, '--prompt', 'x'], { ...base(), ...serviceEnv(READER_SERVICE) }),
      run(['status', doneJob.workflowId, '--json'], { ...base(), ...serviceEnv(READER_SERVICE) }),
    ]);
    assert.equal(nobody.code, 1, said(nobody));
    assert.equal(nobody.stderr.trim().split('\n').length, 1, said(nobody));
    assert.match(nobody.stderr, /needs the writer role on namespace default/);
    assert.equal(reader.code, 1, said(reader));
    assert.match(reader.stderr, /needs the writer role on namespace default.*role reader/);
    assert.equal(status.code, 0, `a reader reads: ${said(status)}`);
  });

  test('the codec server refuses no token, an expired one and one signed by another key', async () => {
    assert.ok(firstToken, 'the first test took a token the codec server accepted');
    assert.equal((await decode()).status, 401);
    const claims = decodeJwt(firstToken);
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT({ ...decodeJwt(await serviceToken(READER_SERVICE)) })
      .setProtectedHeader({ alg: 'RS256', kid: 'forged' })
      .sign(privateKey);
    assert.equal((await decode(`Bearer ${forged}`)).status, 401);
    // The first token, accepted then: by now (the tests between took longer) or after a short wait, expired.
    await waitFor(() => Date.now() / 1000 > (claims.exp ?? 0) + CLOCK_TOLERANCE_SECONDS + 1, {
      timeoutMs: 30_000,
      intervalMs: 250,
      what: 'the token to expire',
    });
    assert.equal((await decode(`Bearer ${firstToken}`)).status, 401);
  });

  test('in the browser the reader reads a decoded prompt and PR link, and is refused terminate', async (t) => {
    if (!existsSync(CHROMIUM_PATH)) return t.skip(`no Chromium at ${CHROMIUM_PATH}`);
    assert.ok(doneJob, 'the first test finished a job');
    const started = await run(['agent', '--project', `sso-${tag}`, '--prompt', `${prompt} [long]`, '--json'], asCli());
    assert.equal(started.code, 0, said(started));
    longJob = String(lastJson(started.stdout).workflowId);
    const session = await signIn('sso-test-reader');
    try {
      const { page } = session;
      await page.goto(workflowUrl(doneJob.workflowId));
      await expectTexts(page, [prompt, doneJob.prLink], 'the decoded prompt and PR link');
      await keepScreenshot(page, path.join(ARTIFACTS, 'reader-decoded.png'), { fullPage: true });
      await page.goto(workflowUrl(longJob));
      await terminateInUi(page, 'reader');
      await expectTexts(page, ['Request unauthorized'], "the server's refusal in the terminate dialog");
      await keepScreenshot(page, path.join(ARTIFACTS, 'reader-terminate-refused.png'));
    } finally {
      await session.close();
    }
    assert.equal(await statusOf(longJob), 'RUNNING', "the reader's terminate did not take effect");
  });

  test('in the browser the writer terminates', async (t) => {
    if (!existsSync(CHROMIUM_PATH)) return t.skip(`no Chromium at ${CHROMIUM_PATH}`);
    assert.ok(longJob, 'the reader test started a long job');
    const session = await signIn('sso-test-writer');
    try {
      await session.page.goto(workflowUrl(longJob));
      await terminateInUi(session.page, 'writer');
      await waitFor(async () => (await statusOf(longJob!)) === 'TERMINATED', {
        timeoutMs: UI_TIMEOUT_MS,
        intervalMs: 300,
        what: "the writer's terminate",
      });
    } finally {
      await session.close();
    }
  });

  test('in the browser a person with no role sees no workflow', async (t) => {
    if (!existsSync(CHROMIUM_PATH)) return t.skip(`no Chromium at ${CHROMIUM_PATH}`);
    assert.ok(doneJob);
    const session = await signIn('sso-test-nobody', { landsOnLogin: true });
    try {
      const { page } = session;
      // Back on the login page, offered to sign in again (UI server 2.54; 2.42 also printed the server's
      // "Request unauthorized." there).
      await expectTexts(page, ['Continue to SSO'], 'the login page again');
      await page.goto(workflowUrl(doneJob.workflowId));
      const text = await page.locator('body').innerText();
      assert.ok(!text.includes(prompt) && !text.includes(doneJob.prLink), `nothing of the job shows:\n${text}`);
      await keepScreenshot(page, path.join(ARTIFACTS, 'nobody.png'));
    } finally {
      await session.close();
    }
  });

  test('the worker keeps running across token expiries: a job three token lifetimes after the first completes', async () => {
    assert.ok(doneJobAt > 0, 'the first job completed');
    // Three lifetimes of the worker's token after the first job (mostly spent by the tests above), it still polls.
    await waitFor(() => Date.now() - doneJobAt > 3 * SERVICE_TOKEN_TTL_S * 1000, {
      timeoutMs: 60_000,
      intervalMs: 500,
      what: 'three service token lifetimes',
    });
    const second = await run(
      ['agent', '--project', `sso-${tag}`, '--prompt', `${prompt} again`, '--wait', '--json'],
      asCli(),
    );
    assert.equal(second.code, 0, said(second));
    assert.equal(lastJson(second.stdout).status, 'completed');
    assert.doesNotMatch(worker!.output.text, /PermissionDenied|Request unauthorized/);
  });

  test('with --tls as well: the CLI signs in as a service over mutual TLS', async () => {
    assert.ok(doneJob);
    const both = await ensureCluster({ sso: true, tls: true });
    assert.ok(both.sso && both.tls);
    const [status, certless, tokenless] = await Promise.all([
      run(['status', doneJob.workflowId, '--json'], { ...asCli(), ...both.clientEnv }),
      run(['status', doneJob.workflowId], asCli()),
      run(['status', doneJob.workflowId], { ...base(), ...both.clientEnv }),
    ]);
    assert.equal(status.code, 0, said(status));
    assert.equal(lastJson(status.stdout).workflowId, doneJob.workflowId);
    assert.notEqual(certless.code, 0, 'a token without a client certificate is refused');
    assert.match(tokenless.stderr, /needs the reader role on namespace default/);
  });
});
