// test-lane: cluster
// What a person sees in the Temporal Web UI: a finished export and a finished agent job, run by the
// real worker against the emulator, then opened in headless Chromium. The list shows the project's
// search attributes as columns (domain, project, job status, PR link); each workflow's pages show the
// static summary and details, the current details, the activity summaries and the search attributes.
// Screenshots go to test-artifacts/web-ui/ (git-ignored).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { type BrowserContext, type Page, chromium } from 'playwright-core';
import { type EmulatorHandle, startEmulator } from '../../emulator';
import { CLUSTER_NAMESPACE } from '../../scripts/cluster/layout';
import { agentSummary, exportSummary, startAgentJob, startExport } from '../../src/client';
import { payloadEncryption } from '../../src/codec';
import type { AgentJobResult } from '../../src/shared/agent-job';
import type { StaticExportResult } from '../../src/shared/static-export';
import type { DocsAdminWorker } from '../../src/worker';
import {
  type ClusterEnv,
  type DevEnv,
  type DocsAdminStack,
  clusterSkipReason,
  createClusterEnv,
  createDevEnv,
  startDocsAdminWorker,
  uniqueTaskQueue,
  waitFor,
  startDocsAdminStack,
} from '../helpers/temporal';
import { CHROMIUM_PATH as CHROMIUM } from '../../scripts/test-setup';
import { keepScreenshot } from '../helpers/browser';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const ARTIFACTS = path.resolve(__dirname, '../../test-artifacts/web-ui');
const KEY = 'mint_web_ui_test_key_0123456789';
const UI_TIMEOUT_MS = 15_000;
const VIEWPORT = { width: 1920, height: 1000 };

// npm test refuses to start without Chromium unless DOCS_ADMIN_SKIP_BROWSER=1 (scripts/test-setup.ts).
const skip =
  !existsSync(CHROMIUM) && process.env.DOCS_ADMIN_SKIP_BROWSER === '1'
    ? `DOCS_ADMIN_SKIP_BROWSER=1 and no Chromium at ${CHROMIUM}`
    : false;

/**
 * The text a person reads: the main area plus the frames the UI renders markdown in (summary,
 * details and current details are each an iframe on /render).
 */
async function visibleText(page: Page): Promise<string> {
  const parts = [await page.locator('main').innerText()];
  for (const frame of page.frames()) {
    if (frame === page.mainFrame()) continue;
    parts.push(
      await frame
        .locator('body')
        .innerText({ timeout: 1_000 })
        .catch(() => ''),
    );
  }
  return parts.join('\n');
}

/** Waits until the page shows every text (the UI loads its panels asynchronously). */
async function expectTexts(page: Page, texts: string[], what: string): Promise<string> {
  let last = '';
  try {
    await waitFor(
      async () => {
        last = await visibleText(page);
        return texts.every((t) => last.includes(t));
      },
      { timeoutMs: UI_TIMEOUT_MS, intervalMs: 200, what },
    );
  } catch (err) {
    const missing = texts.filter((t) => !last.includes(t));
    throw new Error(`${what}: missing ${JSON.stringify(missing)} in the page text:\n${last.slice(0, 3000)}`, {
      cause: err,
    });
  }
  return last;
}

/** Headless Chromium with a profile of its own (removed by close()). */
async function launchBrowser(): Promise<{ browser: BrowserContext; page: Page; close(): Promise<void> }> {
  const userDataDir = mkdtempSync(path.join(os.tmpdir(), 'docs-admin-chromium-'));
  const browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: VIEWPORT,
    timezoneId: 'UTC',
  });
  const page = browser.pages()[0] ?? (await browser.newPage());
  page.setDefaultTimeout(UI_TIMEOUT_MS);
  return {
    browser,
    page,
    async close() {
      await browser.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

interface Run {
  workflowId: string;
  runId: string;
}

describe('Temporal Web UI: each run understood at a glance', { skip }, () => {
  let env: DevEnv;
  let stack: DocsAdminStack;
  let chromiumSession: Awaited<ReturnType<typeof launchBrowser>>;
  let page: Page;
  const taskQueue = uniqueTaskQueue('web-ui');
  const domain = `web-ui-${process.pid}.docs.example.com`;
  const projectId = `web-ui-${process.pid}`;
  const prompt = 'Document the new rate-limit headers on the API reference page';
  let exportRun: Run;
  let agentRun: Run;
  let exportResult: StaticExportResult;
  let agentResult: AgentJobResult;

  const namespaceUrl = (): string => `${env.uiUrl}/namespaces/${env.namespace ?? 'default'}`;
  const workflowUrl = (run: Run, tab: 'history' | 'user-metadata' | 'search-attributes'): string =>
    `${namespaceUrl()}/workflows/${encodeURIComponent(run.workflowId)}/${run.runId}/${tab}`;

  async function shot(name: string): Promise<void> {
    await keepScreenshot(page, path.join(ARTIFACTS, `${name}.png`), { fullPage: true });
  }

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    env = await createDevEnv({ ui: true });
    assert.ok(env.uiUrl, 'the dev server serves the Web UI');
    stack = await startDocsAdminStack(
      env,
      { agentActiveMs: 300, exportQueuedMs: 100, exportDurationMs: 800 },
      { ADMIN_API_KEY: KEY, TEMPORAL_TASK_QUEUE: taskQueue },
    );

    chromiumSession = await launchBrowser();
    page = chromiumSession.page;
    const uiUrl = env.uiUrl;
    await waitFor(
      () =>
        fetch(uiUrl).then(
          (r) => r.ok,
          () => false,
        ),
      { timeoutMs: 20_000, intervalMs: 200, what: `the Web UI at ${uiUrl}` },
    );
  });

  after(async () => {
    await chromiumSession?.close();
    await stack?.close();
    await env?.teardown();
  });

  test('the real worker finishes an export and an agent job against the emulator', async () => {
    const exportHandle = await startExport(env.client, { domain }, { taskQueue });
    const agent = await startAgentJob(env.client, { projectId, prompt }, { taskQueue });
    [exportResult, agentResult] = await Promise.all([exportHandle.result(), agent.handle.result()]);
    assert.equal(exportResult.domain, domain);
    assert.match(agentResult.prLink ?? '', /^https:\/\/github\.com\/.+\/pull\/\d+$/);
    exportRun = { workflowId: exportHandle.workflowId, runId: (await exportHandle.describe()).runId };
    agentRun = { workflowId: agent.workflowId, runId: (await agent.handle.describe()).runId };
  });

  test('the workflow list shows domain, project, job status and PR link as columns', async () => {
    assert.ok(exportRun && agentRun, 'the runs finished');
    // Visibility is eventually consistent: wait until the server lists both runs, then open the list.
    const query = `TaskQueue="${taskQueue}"`;
    await waitFor(
      async () => {
        const listed: string[] = [];
        for await (const execution of env.client.workflow.list({ query })) listed.push(execution.workflowId);
        return listed.includes(exportRun.workflowId) && listed.includes(agentRun.workflowId);
      },
      { timeoutMs: UI_TIMEOUT_MS, intervalMs: 200, what: 'both runs in the visibility store' },
    );
    await page.goto(`${namespaceUrl()}/workflows?query=${encodeURIComponent(query)}`);
    for (const run of [exportRun, agentRun])
      await page.locator('table tbody tr', { hasText: run.workflowId }).waitFor();

    // What an operator does once: add the project's search attributes as columns.
    await page.getByTestId('workflows-summary-table-configuration-button').click();
    for (const column of ['DocsDomain', 'DocsProjectId', 'DocsJobStatus', 'DocsPrLink']) {
      await page.getByTestId(`orderable-list-item-${column}-add-button`).click();
    }
    // Room for them on one screen: run id and times are a click away on each workflow's page.
    for (const column of ['Run ID', 'Start', 'End'])
      await page.getByTestId(`orderable-list-item-${column}-remove-button`).click();
    await page.getByTestId('drawer-close-button').click();
    await page.getByRole('button', { name: 'Collapse saved views' }).click();

    const headers = (await page.locator('table thead th').allInnerTexts()).map((h) => h.trim());
    const cell = async (run: Run, column: string): Promise<string> => {
      const index = headers.indexOf(column);
      assert.ok(index >= 0, `column ${column} is shown (headers: ${headers.join(' | ')})`);
      const row = page.locator('table tbody tr', { hasText: run.workflowId });
      return (await row.locator('td').nth(index).innerText()).trim();
    };
    await waitFor(async () => (await cell(agentRun, 'DocsPrLink')) !== '', { what: 'the PR link cell' });
    // The long workflow ids push the PR link column past 1920 px: a wider window for the picture.
    await page.setViewportSize({ width: 2300, height: 700 });
    await shot('list');
    await page.setViewportSize(VIEWPORT);

    assert.equal(await cell(exportRun, 'DocsDomain'), domain);
    assert.equal(await cell(exportRun, 'DocsJobStatus'), 'completed');
    assert.equal(await cell(agentRun, 'DocsProjectId'), projectId);
    assert.equal(await cell(agentRun, 'DocsJobStatus'), 'completed');
    assert.equal(await cell(agentRun, 'DocsPrLink'), agentResult.prLink);
  });

  test("the export's pages: result, activity summaries, static summary and details, current details, search attributes", async () => {
    await page.goto(workflowUrl(exportRun, 'history'));
    await expectTexts(
      page,
      [exportResult.jobId, `Start static export of ${domain}`, `Generate bundle link for export ${exportResult.jobId}`],
      'export history: result and activity summaries',
    );
    await shot('export-history');

    await page.goto(workflowUrl(exportRun, 'user-metadata'));
    const metadata = await expectTexts(
      page,
      [exportSummary({ domain }), 'Current Details', `Static export · ${domain}`, exportResult.jobId, 'done'],
      'export user metadata: summary, details and current details',
    );
    assert.match(metadata, new RegExp(`domain:?\\s*${domain.replace(/\./g, '\\.')}`), 'static details name the domain');
    await shot('export-metadata');

    await page.goto(workflowUrl(exportRun, 'search-attributes'));
    await expectTexts(
      page,
      ['DocsDomain', domain, 'DocsJobId', exportResult.jobId, 'DocsJobStatus', 'completed'],
      'export search attributes',
    );
    await shot('export-search-attributes');
  });

  test("the agent job's pages: PR link, activity summaries, static summary and details, current details, search attributes", async () => {
    const prLink = agentResult.prLink as string;
    await page.goto(workflowUrl(agentRun, 'history'));
    await expectTexts(
      page,
      [prLink, `create agent job for project ${projectId}`, `poll agent job ${agentResult.jobId}`],
      'agent history: result and activity summaries',
    );
    await shot('agent-history');

    await page.goto(workflowUrl(agentRun, 'user-metadata'));
    await expectTexts(
      page,
      [
        agentSummary({ projectId, prompt }),
        `project: ${projectId}`,
        'Current Details',
        `Agent job for project ${projectId} — done`,
        agentResult.jobId,
        prLink,
      ],
      'agent user metadata: summary, details and current details',
    );
    await shot('agent-metadata');

    await page.goto(workflowUrl(agentRun, 'search-attributes'));
    await expectTexts(
      page,
      ['DocsPrLink', prLink, 'DocsProjectId', projectId, 'DocsJobStatus', 'completed'],
      'agent search attributes',
    );
    await shot('agent-search-attributes');
  });
});

// The cluster's Web UI decodes through the cluster's codec server (npm run cluster points it there):
// a person reads the prompt and the PR link while PostgreSQL holds ciphertext (encryption-cluster.test.ts).
// The codec server requires its bearer token, which the UI server (2.42, 2.54) cannot hand to a browser (it
// forwards only a signed-in user's access token): this browser carries it as sign-on will.
describe(
  'Temporal Web UI on the cluster: encrypted payloads shown decoded',
  { skip: skip || clusterSkipReason() },
  () => {
    let env: ClusterEnv;
    let emu: EmulatorHandle;
    let worker: DocsAdminWorker;
    let chromiumSession: Awaited<ReturnType<typeof launchBrowser>>;
    const taskQueue = uniqueTaskQueue('web-ui-codec');
    const projectId = `web-ui-codec-${process.pid}`;
    const marker = `codec-marker-${Date.now()}`;
    const prompt = `Explain the ${marker} settings page`;

    before(async () => {
      env = await createClusterEnv();
      emu = await startEmulator({ agentActiveMs: 300 });
      worker = await startDocsAdminWorker(
        env,
        {
          ADMIN_API_URL: emu.url,
          ADMIN_API_KEY: KEY,
          TEMPORAL_TASK_QUEUE: taskQueue,
          PAYLOAD_ENCRYPTION_KEYS_FILE: env.ensured.payloadKeysFile,
        },
        { limiterTaskQueue: uniqueTaskQueue('web-ui-codec-limiter') },
      );
      chromiumSession = await launchBrowser();
      const token = readFileSync(env.ensured.codecTokenFile, 'utf8').split('\n')[0] as string;
      await chromiumSession.page.route(`${env.ensured.codecUrl}/**`, (route) =>
        route.continue({ headers: { ...route.request().headers(), authorization: `Bearer ${token}` } }),
      );
    });

    after(async () => {
      await chromiumSession?.close();
      await worker?.close();
      await emu?.close();
      await env?.teardown();
    });

    test('history and user metadata show the prompt and the PR link, stored encrypted', async () => {
      const { dataConverter } = payloadEncryption(env.ensured.payloadKeysFile);
      const client = new Client({ connection: env.connection, namespace: CLUSTER_NAMESPACE, dataConverter });
      const agent = await startAgentJob(client, { projectId, prompt }, { taskQueue });
      const result = await agent.handle.result();
      const runId = (await agent.handle.describe()).runId;
      // Stored: ciphertext only (the plain client sees the encoding, not the summary).
      const raw = await env.client.workflow.getHandle(agent.workflowId).fetchHistory();
      const bytes = Buffer.from(temporal.api.history.v1.History.encode(raw).finish());
      assert.ok(bytes.includes(projectId), 'the search finds plain text (the project id, a search attribute)');
      assert.ok(!bytes.includes(marker), 'the history the server returns has no prompt');

      const { page } = chromiumSession;
      const base = `${env.ensured.uiUrl}/namespaces/${CLUSTER_NAMESPACE}/workflows/${encodeURIComponent(agent.workflowId)}/${runId}`;
      await page.goto(`${base}/history`);
      await expectTexts(
        page,
        [result.prLink as string, `create agent job for project ${projectId}`],
        'decoded history',
      );
      await keepScreenshot(page, path.join(ARTIFACTS, 'cluster-codec-history.png'), { fullPage: true });
      await page.goto(`${base}/user-metadata`);
      await expectTexts(page, [agentSummary({ projectId, prompt }), marker], 'decoded summary with the prompt');
      await keepScreenshot(page, path.join(ARTIFACTS, 'cluster-codec-metadata.png'), { fullPage: true });
    });
  },
);
