// test-lane: parallel
// Pure pieces of the operator surface: worker config additions, schedule timing and calendar
// rendering, CLI error lines, plain progress rate limiting, the Prometheus recorder and the merged
// scrape (with a stand-in for Core's exporter).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { ApplicationFailure, ActivityFailure, RetryState } from '@temporalio/common';
import { WorkflowFailedError } from '@temporalio/client';
import { KEEP_ALIVE_MS, agentReporter, exportReporter, keepAliveLine } from '../../src/cli/progress';
import { failureReason, InvalidInputError, splitAddress, unreachableMessage } from '../../src/client';
import { ConfigError, loadWorkerConfig, parseDuration } from '../../src/config';
import { createPrometheusMetrics, startMetricsServer } from '../../src/observability/prometheus';
import { formatDuration } from '../../src/policies/validation/rate-limiter';
import {
  cronOfCalendar,
  resolveScheduleId,
  timingProblems,
  toOverlapPolicy,
  overlapName,
} from '../../src/client/schedules';
import { errorLine } from '../../src/starter';
import { createLogger } from '../../src/worker';
import type { ExportStatus } from '../../src/shared/static-export';

const BASE_ENV = { ADMIN_API_URL: 'http://127.0.0.1:4010', ADMIN_API_KEY: 'mint_unit_key_123' };

describe('worker config additions', () => {
  test('defaults: metrics on 127.0.0.1, INFO text logs, 30 s grace', () => {
    const config = loadWorkerConfig(BASE_ENV);
    assert.equal(config.metricsHost, '127.0.0.1');
    assert.equal(config.metricsPort, 9464);
    assert.equal(config.logLevel, 'INFO');
    assert.equal(config.logFormat, 'text');
    assert.equal(config.shutdownGraceTimeMs, 30_000);
  });

  test('METRICS_HOST, LOG_LEVEL, LOG_FORMAT, SHUTDOWN_GRACE_TIME are read', () => {
    const config = loadWorkerConfig({
      ...BASE_ENV,
      METRICS_HOST: '0.0.0.0',
      LOG_LEVEL: 'debug',
      LOG_FORMAT: 'JSON',
      SHUTDOWN_GRACE_TIME: '2m',
    });
    assert.equal(config.metricsHost, '0.0.0.0');
    assert.equal(config.logLevel, 'DEBUG');
    assert.equal(config.logFormat, 'json');
    assert.equal(config.shutdownGraceTimeMs, 120_000);
  });

  test('every problem is listed, one per variable, never the key', () => {
    const key = 'mint_secret_value_42';
    try {
      loadWorkerConfig({
        ADMIN_API_KEY: `${key} `,
        LOG_LEVEL: 'loud',
        LOG_FORMAT: 'xml',
        SHUTDOWN_GRACE_TIME: 'later',
        METRICS_HOST: 'a b',
      });
      assert.fail('should throw');
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.problems.length, 6, err.problems.join('\n'));
      for (const name of [
        'ADMIN_API_URL',
        'ADMIN_API_KEY',
        'LOG_LEVEL',
        'LOG_FORMAT',
        'SHUTDOWN_GRACE_TIME',
        'METRICS_HOST',
      ]) {
        assert.ok(
          err.problems.some((p) => p.includes(name)),
          `a problem names ${name}`,
        );
      }
      assert.ok(!err.message.includes(key));
    }
  });

  test('parseDuration', () => {
    assert.equal(parseDuration('500'), 500);
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('1.5s'), 1_500);
    assert.equal(parseDuration('30m'), 1_800_000);
    assert.equal(parseDuration('1d'), 86_400_000);
    assert.throws(() => parseDuration('soon'), /expected a duration/);
    assert.throws(() => parseDuration('-1s'), /expected a duration/);
  });
});

describe('logger', () => {
  test('JSON lines, key redacted wherever it appears', () => {
    const lines: string[] = [];
    const key = 'mint_logger_key_abcdef';
    const logger = createLogger({ logFormat: 'json', secrets: [key], write: (l) => void lines.push(l) });
    logger.info(`calling with ${key}`, { header: `Bearer ${key}`, n: 1n });
    logger.debug('below INFO: dropped');
    assert.equal(lines.length, 1);
    const entry = JSON.parse(lines[0] as string) as Record<string, unknown>;
    assert.equal(entry.level, 'INFO');
    assert.match(String(entry.msg), /calling with \[redacted\]/);
    assert.equal(entry.n, '1');
    assert.ok(!lines[0]!.includes(key));
  });

  test("the limiter worker's expected 'no activities' warning is dropped; the same warning elsewhere is kept", () => {
    const lines: string[] = [];
    const logger = createLogger({ write: (l) => void lines.push(l) });
    const message = 'No activities registered, not polling for activity tasks';
    logger.warn(message, { sdkComponent: 'worker', taskQueue: 'docs-admin-limiter' });
    assert.deepEqual(lines, []);
    logger.warn(message, { sdkComponent: 'worker', taskQueue: 'docs-admin' });
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /WARN {2}No activities registered/);
  });

  test('text lines', () => {
    const lines: string[] = [];
    createLogger({ logLevel: 'WARN', write: (l) => void lines.push(l) }).warn('careful', { a: 1 });
    assert.match(lines[0] as string, /^\d{4}-\d\d-\d\dT\S+Z WARN {2}careful \{"a":1\}\n$/);
  });
});

describe('schedules (pure parts)', () => {
  test('overlap names <-> SDK policies', () => {
    assert.equal(toOverlapPolicy('buffer-one'), 'BUFFER_ONE');
    assert.equal(toOverlapPolicy('terminate-other'), 'TERMINATE_OTHER');
    assert.equal(overlapName('ALLOW_ALL'), 'allow-all');
    assert.throws(() => toOverlapPolicy('sometimes'), InvalidInputError);
  });

  test('timing problems', () => {
    assert.deepEqual(timingProblems({ every: ['1h'] }), []);
    assert.deepEqual(timingProblems({ cron: ['@daily'], timezone: 'Europe/Paris', jitter: '30s' }), []);
    assert.match(timingProblems({})[0] as string, /--cron EXPR and\/or --every/);
    assert.deepEqual(timingProblems({}, false), []);
    assert.match(timingProblems({ cron: ['0 3 *'] })[0] as string, /must have 5 fields/);
    assert.match(timingProblems({ every: ['500ms'] })[0] as string, /shorter than one second/);
    assert.match(timingProblems({ every: ['1h'], timezone: 'Nowhere/Land' })[0] as string, /IANA time zone/);
    assert.match(timingProblems({ every: ['1h'], jitter: 'a bit' })[0] as string, /^jitter:/);
  });

  test('schedule id: given, or export:<domain>', () => {
    assert.equal(resolveScheduleId('my-id', undefined), 'my-id');
    assert.equal(resolveScheduleId(undefined, 'docs.example.com'), 'export:docs.example.com');
    assert.equal(resolveScheduleId(undefined, 'docs.example.com', 'keeper'), 'keeper:docs.example.com');
    assert.throws(() => resolveScheduleId(undefined, 'http://x'), InvalidInputError);
    assert.throws(() => resolveScheduleId(undefined, undefined), /give a schedule id/);
  });

  test('calendar specs render back as cron', () => {
    const all = { second: [{ start: 0, end: 0, step: 1 }], year: [] };
    assert.equal(
      cronOfCalendar({
        ...all,
        minute: [{ start: 30, end: 30, step: 1 }],
        hour: [{ start: 4, end: 4, step: 1 }],
        dayOfMonth: [{ start: 1, end: 31, step: 1 }],
        month: [{ start: 'JANUARY', end: 'DECEMBER', step: 1 }],
        dayOfWeek: [{ start: 'MONDAY', end: 'FRIDAY', step: 1 }],
      }),
      '30 4 * * 1-5',
    );
    assert.equal(
      cronOfCalendar({
        ...all,
        minute: [{ start: 0, end: 59, step: 15 }],
        hour: [
          { start: 1, end: 1, step: 1 },
          { start: 13, end: 13, step: 1 },
        ],
        dayOfMonth: [],
        month: [{ start: 'MARCH', end: 'MARCH', step: 1 }],
        dayOfWeek: [],
      }),
      '*/15 1,13 * 3 *',
    );
  });

  test('formatDuration', () => {
    assert.equal(formatDuration(3_600_000), '1h');
    assert.equal(formatDuration(90_000), '90s');
    assert.equal(formatDuration(172_800_000), '2d');
    assert.equal(formatDuration(1_500), '1500ms');
  });
});

describe('CLI error lines', () => {
  test('invalid input lists every problem on one line', () => {
    assert.equal(
      errorLine(new InvalidInputError(['a is wrong', 'b is wrong'])),
      'error: invalid input: a is wrong; b is wrong',
    );
  });

  test('a failed workflow: the failure type and message of the root ApplicationFailure', () => {
    const root = ApplicationFailure.create({
      type: 'PlanRequired',
      message: 'static export needs an Enterprise plan\nsecond line',
      nonRetryable: true,
    });
    const activity = new ActivityFailure(
      'activity failed',
      'startExport',
      '1',
      RetryState.NON_RETRYABLE_FAILURE,
      undefined,
      root,
    );
    const wrapped = new WorkflowFailedError('Workflow execution failed', activity, RetryState.NON_RETRYABLE_FAILURE);
    assert.equal(errorLine(wrapped), 'error: workflow failed: PlanRequired: static export needs an Enterprise plan');
    const top = ApplicationFailure.create({
      type: 'ExportFailed',
      message: 'export job j1 failed: renderer crashed',
      cause: root,
    });
    assert.equal(
      failureReason(new WorkflowFailedError('x', top, RetryState.NON_RETRYABLE_FAILURE)),
      'ExportFailed: export job j1 failed: renderer crashed',
    );
  });

  test('multi-line messages become one line', () => {
    assert.equal(errorLine(new Error('first\n  second')), 'error: first second');
  });

  test('unreachable: address, reason, what to do', () => {
    assert.equal(
      unreachableMessage('127.0.0.1:1', new Error('connect ECONNREFUSED 127.0.0.1:1')),
      'cannot reach the Temporal server at 127.0.0.1:1 (connection refused); start one with `npm run server` or set TEMPORAL_ADDRESS',
    );
    assert.deepEqual(splitAddress('temporal.internal:7233'), { host: 'temporal.internal', port: 7233 });
    assert.deepEqual(splitAddress('[::1]:7000'), { host: '::1', port: 7000 });
    assert.deepEqual(splitAddress('temporal'), { host: 'temporal', port: 7233 });
  });
});

describe('progress without a TTY', () => {
  const status = (phase: ExportStatus['phase'], progress: number, pageCount: number): ExportStatus => ({
    phase,
    jobId: 'j',
    status: null,
    progress,
    pageCount,
    polls: 0,
    lastPollAt: null,
    nextPollAt: null,
  });

  test('export: plain lines, at most one per interval within a phase, phase changes at once', () => {
    const out: string[] = [];
    let now = 0;
    const reporter = exportReporter({ write: (s) => (out.push(s), true), isTTY: false }, 'docs.example.com', {
      plainIntervalMs: 2_000,
      now: () => now,
    });
    reporter.update(status('exporting', 10, 5));
    now = 500;
    reporter.update(status('exporting', 20, 10)); // too soon
    now = 2_600;
    reporter.update(status('exporting', 40, 20));
    reporter.update(status('exporting', 40, 20)); // unchanged
    now = 2_700;
    reporter.update(status('bundling', 100, 50)); // new phase
    reporter.stop();
    assert.deepEqual(out, [
      'export docs.example.com: exporting 10% (5 pages)\n',
      'export docs.example.com: exporting 40% (20 pages)\n',
      'export docs.example.com: bundling 100% (50 pages)\n',
    ]);
  });

  test('agent: elapsed time and status, no escape codes', () => {
    const out: string[] = [];
    let now = 1_000;
    const reporter = agentReporter({ write: (s) => (out.push(s), true), isTTY: false }, 'job-1', { now: () => now });
    now = 66_000;
    reporter.update({
      phase: 'polling',
      jobId: 'job-1',
      status: 'active',
      prLink: null,
      polls: 4,
      lastPollAt: null,
      nextPollAt: null,
    });
    reporter.stop();
    assert.deepEqual(out, ['agent job job-1: polling (active), 1m05s elapsed, 4 polls\n']);
  });

  test('not a terminal: a line at least every 30 s while waiting, saying what the job waits for or why no status came', () => {
    const out: string[] = [];
    let now = 0;
    const reporter = agentReporter({ write: (s) => (out.push(s), true), isTTY: false }, 'job-1', { now: () => now });
    const waiting = {
      phase: 'waiting-for-permit' as const,
      jobId: null,
      status: null,
      prLink: null,
      polls: 0,
      lastPollAt: null,
      nextPollAt: null,
      waitingFor: 'a permit from agent-rate-limiter:P, 2 request(s) ahead',
    };
    const ticks = (untilMs: number, problem?: string) => {
      for (; now < untilMs; now += 1_000) reporter.tick(problem);
    };
    ticks(KEEP_ALIVE_MS + 1_000, 'its status query did not answer (deadline exceeded)');
    reporter.update(waiting);
    ticks(45_000);
    reporter.update(waiting); // unchanged, 14 s after the last line: printed again
    ticks(KEEP_ALIVE_MS + 45_000 + 1, 'its status query did not answer (deadline exceeded)');
    assert.deepEqual(out, [
      'agent job job-1: no status yet, 30s elapsed: its status query did not answer (deadline exceeded)\n',
      'agent job job-1: waiting-for-permit, 31s elapsed, 0 polls; waiting for a permit from agent-rate-limiter:P, 2 request(s) ahead\n',
      'agent job job-1: waiting-for-permit, 45s elapsed, 0 polls; waiting for a permit from agent-rate-limiter:P, 2 request(s) ahead\n',
      'agent job job-1: waiting-for-permit, 1m15s elapsed, 0 polls; waiting for a permit from agent-rate-limiter:P, 2 request(s) ahead' +
        ' (no status for 30s: its status query did not answer (deadline exceeded))\n',
    ]);
  });

  test('a terminal gets no keep-alive lines (its status line is live); export keeps alive as agent does', () => {
    const tty: string[] = [];
    const onTerminal = agentReporter({ write: (s) => (tty.push(s), true), isTTY: true }, 'job-1', {
      now: () => 60_000,
    });
    onTerminal.tick('x');
    assert.deepEqual(tty, []);
    const out: string[] = [];
    let now = 0;
    const reporter = exportReporter({ write: (s) => (out.push(s), true), isTTY: false }, 'docs.example.com', {
      now: () => now,
    });
    reporter.update(status('exporting', 10, 5));
    now = KEEP_ALIVE_MS - 1;
    reporter.tick();
    now = KEEP_ALIVE_MS;
    reporter.tick();
    assert.deepEqual(out, [
      'export docs.example.com: exporting 10% (5 pages)\n',
      'export docs.example.com: exporting 10% (5 pages) (no status for 30s)\n',
    ]);
  });

  test('keepAliveLine: a fresh status stands as it is', () => {
    assert.equal(keepAliveLine('x', { text: 'x: polling', atMs: 50_000 }, 0, 60_000, 'p'), 'x: polling');
  });
});

describe('Prometheus recorder and endpoint', () => {
  test('counters by label; one scrape carries the SDK exporter text too', async () => {
    const metrics = createPrometheusMetrics({ processMetrics: false });
    metrics.apiCall('createAgentJob', '201', 120);
    metrics.apiCall('createAgentJob', '429', 5);
    metrics.apiCall('getExport', 'NetworkError', 1);
    metrics.poll('export');
    metrics.poll('export');
    metrics.activityRetry('createAgentJob');
    metrics.bundleRefresh();
    metrics.bundleApplied('webhook');
    metrics.sinkRefused('inline');

    const core = http.createServer((_req, res) =>
      res.end(
        '# HELP temporal_request Requests\n# TYPE temporal_request counter\ntemporal_request{operation="Poll"} 7\n',
      ),
    );
    await new Promise<void>((resolve) => core.listen(0, '127.0.0.1', resolve));
    const corePort = (core.address() as AddressInfo).port;
    const server = await startMetricsServer({
      registry: metrics.registry,
      port: 0,
      sdkMetricsUrl: `http://127.0.0.1:${corePort}/metrics`,
    });
    try {
      assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const text = await (await fetch(server.url)).text();
      for (const line of [
        'docs_admin_api_calls_total{operation="createAgentJob",status="201"} 1',
        'docs_admin_api_calls_total{operation="createAgentJob",status="429"} 1',
        'docs_admin_api_calls_total{operation="getExport",status="NetworkError"} 1',
        'docs_admin_api_rate_limited_total{operation="createAgentJob"} 1',
        'docs_admin_polls_total{kind="export"} 2',
        'docs_admin_activity_retries_total{activity_type="createAgentJob"} 1',
        'docs_admin_bundle_refreshes_total 1',
        'docs_admin_bundles_applied_total{sink="webhook"} 1',
        'docs_admin_keeper_sink_refusals_total{reason="inline"} 1',
        'docs_admin_sdk_metrics_up 1',
        'temporal_request{operation="Poll"} 7',
      ]) {
        assert.ok(text.includes(`${line}\n`), `scrape has: ${line}`);
      }
      // Core's exporter gone: the project's metrics are still served, sdk_metrics_up says so.
      await new Promise<void>((resolve) => core.close(() => resolve()));
      const without = await (await fetch(server.url)).text();
      assert.ok(without.includes('docs_admin_sdk_metrics_up 0\n'));
      assert.ok(!without.includes('temporal_request'));
      assert.equal((await fetch(server.url.replace('/metrics', '/other'))).status, 404);
    } finally {
      await server.close();
      core.close();
    }
  });
});
