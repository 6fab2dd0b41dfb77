// test-lane: parallel
// The shipped monitoring against a live worker (`npm run worker` as a process, a dev server, the
// emulator): every metric a dashboard panel or an alert rule queries exists in the worker's scrape, and
// Debian's Prometheus with the shipped rules sees DocsAgentJobNeedsOperator firing for a parked job.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { parse, stringify } from 'yaml';
import { awaitAgentJob, startAgentJob } from '../../src/client';
import { NEEDS_OPERATOR, agentStatusQuery, agentWorkflowId } from '../../src/shared/agent-job';
import { type EmulatorHandle, startEmulator } from '../../emulator';
import { freeLoopbackPort } from '../../src/observability/free-port';
import {
  PROMETHEUS_BIN,
  RULES_FILE,
  prometheusArgs,
  prometheusConfig,
  waitReady,
} from '../../scripts/cluster/monitoring';
import { WorkerProcess } from '../chaos/helpers';
import { createDevEnv, uniqueTaskQueue, waitFor } from '../helpers/temporal';
import { metricNames } from '../helpers/promql';

const ROOT = path.resolve(__dirname, '../..');
const KEY = 'mint_monitoring_test_key_0123456789';
/**
 * SDK counters Core emits only once their event happened (an empty long poll after its minute, an RPC
 * or workflow task failure, a sticky cache miss or forced eviction): a short run cannot show them.
 */
const EMITTED_ON_EVENT_ONLY = new Set([
  'temporal_request_failure',
  'temporal_long_request_failure',
  'temporal_workflow_task_queue_poll_empty',
  'temporal_activity_poll_no_task',
  'temporal_workflow_task_execution_failed',
  'temporal_sticky_cache_miss',
  'temporal_sticky_cache_total_forced_eviction',
]);

interface RuleFile {
  groups: { name: string; rules: { alert?: string; record?: string; expr: string; for?: string }[] }[];
}

function queriedMetrics(): Map<string, string> {
  const where = new Map<string, string>();
  const dashboard = JSON.parse(readFileSync(path.join(ROOT, 'deploy/grafana/docs-admin.json'), 'utf8')) as {
    panels: { title: string; targets?: { expr: string }[] }[];
  };
  for (const panel of dashboard.panels)
    for (const t of panel.targets ?? []) for (const m of metricNames(t.expr)) where.set(m, `panel "${panel.title}"`);
  const rules = parse(readFileSync(RULES_FILE, 'utf8')) as RuleFile;
  for (const rule of rules.groups.flatMap((g) => g.rules))
    for (const m of metricNames(rule.expr)) where.set(m, `rule ${rule.alert ?? rule.record}`);
  return where;
}

/** Metric families of a scrape (TYPE lines): name -> type. */
function families(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) out.set(m[1]!, m[2]!);
  return out;
}

function exists(name: string, types: Map<string, string>): boolean {
  if (types.has(name)) return true;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return base !== name && types.get(base) === 'histogram';
}

describe('monitoring: dashboard and alert rules against a live worker', () => {
  let env: TestWorkflowEnvironment;
  let emu: EmulatorHandle;
  let worker: WorkerProcess;
  let metricsPort: number;
  const taskQueue = uniqueTaskQueue('monitoring');
  const parkedProject = `mon-parked-${process.pid}-${Date.now().toString(36)}`;

  before(async () => {
    env = await createDevEnv();
    emu = await startEmulator({ agentActiveMs: 300 });
    metricsPort = await freeLoopbackPort();
    worker = await WorkerProcess.start({
      env: {
        TEMPORAL_ADDRESS: env.address,
        TEMPORAL_TASK_QUEUE: taskQueue,
        ADMIN_API_URL: emu.url,
        ADMIN_API_KEY: KEY,
        AGENT_RATE_LIMIT: '100/10s',
        METRICS_PORT: String(metricsPort),
      },
    });
    // A job that completes, one that fails, and one whose create outcome is unknown (it parks).
    const ok = await startAgentJob(
      env.client,
      { projectId: `mon-ok-${process.pid}`, prompt: 'Fix a typo' },
      { taskQueue },
    );
    await awaitAgentJob(env.client, ok.workflowId);
    const failing = await startAgentJob(
      env.client,
      { projectId: `mon-fail-${process.pid}`, prompt: 'Break it [fail]' },
      { taskQueue },
    );
    await awaitAgentJob(env.client, failing.workflowId).catch(() => undefined);
    emu.setFaults([{ route: 'createAgentJob', kind: '500-after-commit', count: 1 }]);
    void startAgentJob(
      env.client,
      { projectId: parkedProject, prompt: 'Add a page', requestId: 'r1' },
      { taskQueue },
    ).catch(() => undefined);
    const workflowId = agentWorkflowId(parkedProject, 'r1');
    await waitFor(
      async () =>
        (
          await env.client.workflow
            .getHandle(workflowId)
            .query(agentStatusQuery)
            .catch(() => null)
        )?.phase === NEEDS_OPERATOR,
      { timeoutMs: 30_000, what: 'the job to park' },
    );
  });

  after(async () => {
    await worker?.kill('SIGTERM');
    await emu?.close();
    await env?.teardown();
  });

  const scrape = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();

  test('every metric a dashboard panel or an alert rule queries is in the worker scrape', async () => {
    const queried = queriedMetrics();
    assert.ok(queried.size >= 30, `${queried.size} metrics queried`);
    const types = families(await scrape());
    const missing = [...queried]
      .filter(([name]) => name !== 'up' && !EMITTED_ON_EVENT_ONLY.has(name) && !exists(name, types))
      .map(([name, where]) => `${name} (${where})`);
    assert.deepEqual(missing, []);
  });

  test('the worker reports the parked job', async () => {
    await waitFor(async () => /^docs_admin_agent_jobs_needs_operator 1$/m.test(await scrape()), {
      timeoutMs: 30_000,
      what: 'docs_admin_agent_jobs_needs_operator 1',
    });
  });

  test("Debian's Prometheus with the shipped rules fires DocsAgentJobNeedsOperator", { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'docs-admin-prometheus-'));
    let prometheus: ChildProcess | undefined;
    try {
      // The shipped rules with every `for:` cut to 6 s, so that the alert fires within seconds while
      // one slow or failed scrape of a loaded worker (or the first evaluation, before any scrape) does
      // not fire DocsNoWorkerScraped: that takes the worker unscraped across three evaluations.
      const rules = parse(readFileSync(RULES_FILE, 'utf8')) as RuleFile;
      for (const rule of rules.groups.flatMap((g) => g.rules)) if (rule.alert) rule.for = '6s';
      writeFileSync(path.join(dir, 'alerts.yml'), stringify(rules));
      writeFileSync(
        path.join(dir, 'prometheus.yml'),
        prometheusConfig({
          ruleFiles: [path.join(dir, 'alerts.yml')],
          staticTargets: [`127.0.0.1:${metricsPort}`],
          interval: '2s',
        }),
      );
      const port = await freeLoopbackPort();
      prometheus = spawn(PROMETHEUS_BIN, prometheusArgs(dir, port), { stdio: ['ignore', 'ignore', 'pipe'] });
      const log: string[] = [];
      prometheus.stderr!.on('data', (c: Buffer) => log.push(c.toString()));
      writeFileSync(path.join(dir, 'prometheus.log'), '');
      await waitReady(port, path.join(dir, 'prometheus.log'));
      const firing = await waitFor(
        async () => {
          const body = (await (await fetch(`http://127.0.0.1:${port}/api/v1/alerts`)).json()) as {
            data: { alerts: { labels: { alertname: string }; state: string }[] };
          };
          const names = body.data.alerts.filter((a) => a.state === 'firing').map((a) => a.labels.alertname);
          return names.includes('DocsAgentJobNeedsOperator') ? names : null;
        },
        { timeoutMs: 60_000, intervalMs: 500, what: 'DocsAgentJobNeedsOperator firing' },
      );
      assert.ok(!firing.includes('DocsNoWorkerScraped'), `firing: ${firing.join(', ')}`);
    } finally {
      if (prometheus && prometheus.exitCode === null) {
        const exited = new Promise((resolve) => prometheus!.once('exit', resolve));
        prometheus.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
