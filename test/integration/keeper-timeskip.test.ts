// test-lane: parallel
// bundleKeeper and staticExport over days of simulated time on the time-skipping test server. Real HTTP
// cannot follow skipped time, so the activities are fakes with the real activities' names; they read the
// (skipped) time from the activity context to compute job progress and link expiry.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { ExportActivities } from '../../src/activities/export';
import type { ApplyBundleRequest, ApplyBundleResult, BundleCheck, KeeperActivities } from '../../src/activities/keeper';
import { lookupSink, parseSinksFile } from '../../src/activities/sinks-file';
import type { Bundle, StaticExportJob } from '../../src/api/types';
import {
  type BundleKeeperInput,
  type KeeperStatus,
  keeperStatusQuery,
  keeperWorkflowId,
  pauseSignal,
  SINK_REFUSED,
  pinVersionSignal,
  publishSignal,
  resumeSignal,
} from '../../src/shared/bundle-keeper';
import type { StaticExportInput } from '../../src/shared/static-export';
import { bundleKeeper, staticExport } from '../../src/workflows';
import { createTimeSkippingEnv, runWorker, uniqueTaskQueue } from '../helpers/temporal';
import { WorkflowType } from '../../src/shared/workflow-types';

/** Today's workflows and `continueInto`, which continues as new into a keeper as an earlier release's run does. */
const EARLIER_RELEASE = path.resolve(__dirname, '../replay/fixtures/earlier-release-continuation');

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

interface Applied {
  jobId: string;
  url: string;
  version: string | null;
  appliedAtMs: number;
  expiresAtMs: number;
}

/** The sinks file the fakes look keepers' sinks up in (the real lookup; nothing is written). */
const SINKS = `
allowedDirs: [/srv/keeper]
sinks:
  fake-file: {type: file, path: /srv/keeper/docs.json, domains: [docs.example.com, fail-docs.example.com]}
  fake-mirror: {type: mirror, dir: /srv/keeper/mirror, urlPrefix: "http://m.internal", domains: [docs.example.com]}
`;

/** An in-memory admin API + sink whose clock is the (skipped) time of the activity being run. */
class FakeExport {
  /** The worker's sinks file as the fakes see it (a test edits it to add a sink). */
  sinksYaml = SINKS;
  resolves = 0;
  linkLifetimeMs = HOUR;
  exportDurationMs = 10 * MIN;
  /** Verification fails for every job except these (when set). */
  verifyOnly: Set<string> | null = null;
  /** startExport answers 403 PlanRequired. */
  planRequired = false;
  starts: StaticExportInput[] = [];
  verifies: string[] = [];
  applied: Applied[] = [];
  links = 0;
  private readonly jobs = new Map<string, { input: StaticExportInput; startedAtMs: number }>();

  static now(): number {
    return Context.current().info.currentAttemptScheduledTimestampMs;
  }

  /** The (skipped) time of any call: a local activity's scheduled time is the worker's clock, so ask the server. */
  static async clockNow(): Promise<number> {
    return Context.current().info.isLocal ? env.currentTimeMs() : FakeExport.now();
  }

  private view(jobId: string, nowMs: number): StaticExportJob {
    const job = this.jobs.get(jobId);
    if (!job)
      throw ApplicationFailure.create({ type: 'NotFound', message: `job ${jobId} not found`, nonRetryable: true });
    const elapsed = nowMs - job.startedAtMs;
    const fraction = Math.min(1, Math.max(0, elapsed / this.exportDurationMs));
    const failing = job.input.domain.startsWith('fail-');
    const status = fraction < 1 ? (elapsed < MIN ? 'queued' : 'running') : failing ? 'failed' : 'completed';
    return {
      jobId,
      status,
      progress: Math.round(fraction * 100),
      pageCount: Math.round(fraction * 40),
      createdAt: new Date(job.startedAtMs).toISOString(),
      updatedAt: new Date(nowMs).toISOString(),
      ...(status === 'failed' ? { error: 'render failed: page /index threw ReferenceError' } : {}),
    };
  }

  activities(): ExportActivities & KeeperActivities {
    const lookup = (sink: unknown, allowInline: boolean, domain: string) =>
      lookupSink(parseSinksFile(this.sinksYaml, '/etc/sinks.yaml'), sink, allowInline, domain);
    return {
      resolveSink: async (req) => {
        this.resolves++;
        const found = lookup(req.sink, req.allowInline, req.domain);
        return 'refused' in found ? { refused: found.refused } : { name: found.name, type: found.sink.type };
      },
      startExport: async (input: StaticExportInput): Promise<StaticExportJob> => {
        this.starts.push(input);
        if (this.planRequired) {
          throw ApplicationFailure.create({
            type: 'PlanRequired',
            message: 'startExport: static export is not enabled for this plan',
            nonRetryable: true,
          });
        }
        const jobId = `exp_${this.starts.length}`;
        const nowMs = await FakeExport.clockNow();
        this.jobs.set(jobId, { input, startedAtMs: nowMs });
        return this.view(jobId, nowMs);
      },
      getExportStatus: async (jobId: string) => this.view(jobId, await FakeExport.clockNow()),
      generateBundle: async (jobId: string): Promise<Bundle> => {
        const nowMs = await FakeExport.clockNow();
        if (this.view(jobId, nowMs).status !== 'completed')
          throw ApplicationFailure.create({ type: 'Conflict', message: 'not completed' });
        this.links++;
        return {
          jobId,
          bundleUrl: `https://bundles.example/${jobId}.tar.gz?link=${this.links}&sig=s3cr3t`,
          sizeBytes: 4096,
          expiresAt: new Date(nowMs + this.linkLifetimeMs).toISOString(),
        };
      },
      verifyBundle: async (bundle: Bundle): Promise<BundleCheck> => {
        this.verifies.push(bundle.jobId);
        if (this.verifyOnly && !this.verifyOnly.has(bundle.jobId)) {
          throw ApplicationFailure.create({
            type: 'BundleInvalid',
            message: `bundle of ${bundle.jobId} is 12 bytes, but sizeBytes says 4096`,
            nonRetryable: true,
          });
        }
        return { bytes: bundle.sizeBytes, sha256: 'f'.repeat(64) };
      },
      applyBundle: async (req: ApplyBundleRequest): Promise<ApplyBundleResult> => {
        const found = lookup(req.sink, true, req.domain);
        if ('refused' in found)
          throw ApplicationFailure.create({ type: SINK_REFUSED, message: found.refused, nonRetryable: true });
        this.applied.push({
          jobId: req.jobId,
          url: req.bundleUrl,
          version: req.version,
          appliedAtMs: FakeExport.now(),
          expiresAtMs: Date.parse(req.expiresAt),
        });
        return { sink: found.sink.type, appliedUrl: req.bundleUrl, appliedExpiresAt: req.expiresAt };
      },
    };
  }
}

/** Moments where the deployment pointed at an expired link, between the first apply and `endMs`. */
function expiredGaps(applied: Applied[], endMs: number): { fromMs: number; toMs: number }[] {
  const gaps: { fromMs: number; toMs: number }[] = [];
  applied.forEach((a, i) => {
    const until = applied[i + 1]?.appliedAtMs ?? endMs;
    if (a.expiresAtMs <= until) gaps.push({ fromMs: a.expiresAtMs, toMs: until });
  });
  return gaps;
}

let env: TestWorkflowEnvironment;
before(async () => {
  env = await createTimeSkippingEnv();
});
after(async () => {
  await env?.teardown();
});

async function withKeeper(
  fake: FakeExport,
  input: Omit<BundleKeeperInput, 'sink'> & { sink?: BundleKeeperInput['sink'] },
  fn: (handle: Awaited<ReturnType<TestWorkflowEnvironment['client']['workflow']['start']>>) => Promise<void>,
): Promise<void> {
  const taskQueue = uniqueTaskQueue('keeper-ts');
  await runWorker(env, { taskQueue, activities: fake.activities() }, async () => {
    const handle = await env.client.workflow.start(bundleKeeper, {
      taskQueue,
      workflowId: `${keeperWorkflowId(input.domain)}-${taskQueue}`,
      args: [{ sink: 'fake-file', ...input }],
    });
    try {
      await fn(handle);
    } finally {
      await handle.terminate('test over').catch(() => undefined);
    }
  });
}

const status = (handle: { query: (q: typeof keeperStatusQuery) => Promise<KeeperStatus> }) =>
  handle.query(keeperStatusQuery);

describe('bundleKeeper over simulated days', () => {
  test('2 days of 1-hour links: one refresh per lifetime, never an expired link, continue-as-new', async () => {
    const fake = new FakeExport();
    const started = Date.now();
    // About 53 refreshes: the run continues as new once (after 40) and the counts carry across.
    await withKeeper(fake, { domain: 'docs.example.com', continueAsNewAfterCycles: 40 }, async (handle) => {
      await env.sleep(2 * DAY);
      const endMs = await env.currentTimeMs();
      const s = await status(handle);
      const description = await handle.describe();

      assert.equal(fake.starts.length, 1, 'one export, then only refreshes');
      assert.equal(s.exportsDone, 1);
      const first = fake.applied[0]!;
      // Refresh at 90 % of the lifetime (margin 10 % = 6 min): one per 54 min.
      const expected = Math.floor((endMs - first.appliedAtMs) / (54 * MIN));
      assert.ok(Math.abs(s.refreshesDone - expected) <= 1, `refreshes ${s.refreshesDone}, expected ${expected} +-1`);
      assert.equal(fake.applied.length, s.refreshesDone + 1);
      assert.ok(fake.applied.every((a) => a.jobId === first.jobId));
      assert.deepEqual(expiredGaps(fake.applied, endMs), [], 'the applied link never expired');
      assert.equal(fake.verifies.length, fake.applied.length, 'every applied link was verified first');
      assert.notEqual(description.runId, handle.firstExecutionRunId, 'continued as new at least once');
      assert.equal(s.jobId, first.jobId);
      assert.equal(s.paused, false);
      assert.ok(Date.parse(s.expiresAt!) > endMs);
      console.log(
        `keeper 2 simulated days: ${s.refreshesDone} refreshes (expected ${expected}), ${fake.applied.length} applies, ` +
          `history now ${description.historyLength} events in the current run, wall ${Date.now() - started} ms`,
      );
    });
  });

  test('publishes during an export coalesce into one follow-up export', async () => {
    const fake = new FakeExport();
    await withKeeper(fake, { domain: 'docs.example.com' }, async (handle) => {
      await env.sleep(30 * MIN);
      assert.equal((await status(handle)).exportsDone, 1);
      await handle.signal(publishSignal);
      await env.sleep(MIN); // the follow-up export is running now (10 simulated minutes)
      assert.equal((await status(handle)).exporting, true);
      for (let i = 0; i < 5; i++) await handle.signal(publishSignal);
      assert.equal((await status(handle)).exportWanted, true);
      await env.sleep(HOUR);
      const s = await status(handle);
      assert.equal(fake.starts.length, 3, 'initial + publish + one coalesced follow-up');
      assert.equal(s.exportsDone, 3);
      assert.equal(s.exportWanted, false);
      assert.equal(s.jobId, 'exp_3');
      assert.deepEqual(expiredGaps(fake.applied, await env.currentTimeMs()), []);
    });
  });

  test('pin exports that version and applies it with staticExport.version', async () => {
    const fake = new FakeExport();
    await withKeeper(fake, { domain: 'docs.example.com' }, async (handle) => {
      await env.sleep(30 * MIN);
      await handle.signal(pinVersionSignal, 'v2');
      await env.sleep(30 * MIN);
      const s = await status(handle);
      assert.equal(s.version, 'v2');
      assert.deepEqual(fake.starts.at(-1), { domain: 'docs.example.com', version: 'v2' });
      assert.equal(fake.applied.at(-1)!.version, 'v2');
      assert.equal(s.jobId, 'exp_2');
    });
  });

  test('a bundle that fails verification is never applied; the old config stays and keeps being refreshed', async () => {
    const fake = new FakeExport();
    await withKeeper(fake, { domain: 'docs.example.com' }, async (handle) => {
      await env.sleep(30 * MIN);
      fake.verifyOnly = new Set(['exp_1']);
      await handle.signal(publishSignal);
      await env.sleep(3 * HOUR);
      let s = await status(handle);
      assert.equal(s.jobId, 'exp_1', 'old job still live');
      assert.ok(
        fake.applied.every((a) => a.jobId === 'exp_1'),
        'bad bundle never applied',
      );
      const badAttempts = fake.verifies.filter((j) => j === 'exp_2').length;
      assert.ok(badAttempts >= 3, `retried verification of the new bundle (${badAttempts} attempts)`);
      assert.match(s.lastError ?? '', /exp_2 not applied \(previous config stays\).*BundleInvalid/);
      assert.deepEqual([s.state, s.pendingJobId], ['installing', 'exp_2'], 'the status says what it is installing');
      assert.ok(s.refreshesDone >= 3, 'the old link kept being refreshed');
      assert.deepEqual(expiredGaps(fake.applied, await env.currentTimeMs()), []);

      fake.verifyOnly = null; // the storage problem is fixed: the next retry applies the new bundle
      await env.sleep(HOUR);
      s = await status(handle);
      assert.equal(s.jobId, 'exp_2');
      assert.equal(s.lastError, null);
      assert.deepEqual([s.state, s.pendingJobId], ['keeping', null]);
      assert.equal(fake.starts.length, 2, 'no extra export: the retry generated a fresh link for the same job');
    });
  });

  test('pause stops exports and refreshes; resume catches up at once', async () => {
    const fake = new FakeExport();
    await withKeeper(fake, { domain: 'docs.example.com' }, async (handle) => {
      await env.sleep(30 * MIN);
      await handle.signal(pauseSignal);
      const appliedBefore = fake.applied.length;
      await handle.signal(publishSignal);
      await env.sleep(3 * HOUR);
      let s = await status(handle);
      assert.equal(s.paused, true);
      assert.equal(fake.applied.length, appliedBefore, 'nothing applied while paused');
      assert.equal(fake.starts.length, 1, 'no export while paused');
      assert.equal(s.exportWanted, true, 'the publish is remembered');

      await handle.signal(resumeSignal);
      await env.sleep(30 * MIN);
      s = await status(handle);
      assert.equal(s.paused, false);
      assert.equal(fake.starts.length, 2, 'the remembered publish exported');
      assert.ok(fake.applied.length >= appliedBefore + 2, 'refreshed at once and applied the new export');
      assert.ok(Date.parse(s.expiresAt!) > (await env.currentTimeMs()));
    });
  });

  test('a sink the worker does not hold is refused: nothing exported or applied; it resumes once the file holds it', async () => {
    const fake = new FakeExport();
    await withKeeper(fake, { domain: 'docs.example.com', sink: 'later-config' }, async (handle) => {
      await env.sleep(2 * HOUR);
      let s = await status(handle);
      assert.match(s.sinkRefused!, /holds no sink "later-config": add it under "sinks:" in \/etc\/sinks.yaml/);
      assert.equal(s.state, 'sink-refused');
      assert.equal(fake.starts.length, 0, 'no export for a refused sink');
      assert.equal(fake.applied.length, 0);
      const checks = fake.resolves;
      assert.ok(checks >= 3 && checks <= 40, `checked again with back-off: ${checks}`);
      const { currentDetails } = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
      assert.match(currentDetails!, /waiting: sink refused/);
      assert.match(currentDetails!, /holds no sink "later-config"/);

      fake.sinksYaml += '  later-config: {type: file, path: /srv/keeper/later.json, domains: [docs.example.com]}\n';
      await env.sleep(30 * MIN);
      s = await status(handle);
      assert.equal(s.sinkRefused, null);
      assert.deepEqual([s.state, s.pendingJobId], ['keeping', null]);
      assert.equal(fake.starts.length, 1);
      assert.equal(fake.applied.length, 1, 'applied once the file holds the sink');

      // The sink leaves the file: the next refresh is refused, the live config stays, the keeper waits.
      fake.sinksYaml = SINKS;
      await env.sleep(2 * HOUR);
      s = await status(handle);
      assert.match(s.sinkRefused!, /later-config/);
      assert.equal(s.jobId, fake.applied[0]!.jobId, 'what was applied is not lost');
      assert.equal(fake.applied.length, 1);
    });
  });

  test('a keeper carried from an earlier release goes on with its inline sink only where the file holds an equal one', async () => {
    const fake = new FakeExport();
    const carry = {
      current: null,
      pending: null,
      version: null,
      exportsDone: 0,
      refreshesDone: 0,
      exportWanted: true,
      paused: false,
      exportFailures: 0,
      exportRetryAtMs: null,
      lastError: null,
      generation: 1,
    };
    const inline = { type: 'file', path: '/srv/keeper/old.json' } as unknown as string;
    // A run of that release continues as new into today's code (a start holding the carry is refused).
    const taskQueue = uniqueTaskQueue('keeper-ts-earlier');
    // The carry as that release wrote it: its export and sink as flags (decoded where it enters today).
    const keeperInput = { domain: 'docs.example.com', sink: inline, carry };
    await runWorker(env, { taskQueue, activities: fake.activities(), workflowsPath: EARLIER_RELEASE }, async () => {
      const handle = await env.client.workflow.start('continueInto', {
        taskQueue,
        workflowId: `${keeperWorkflowId(keeperInput.domain)}-${taskQueue}`,
        args: [WorkflowType.bundleKeeper, [keeperInput]],
      });
      await env.sleep(HOUR);
      let s = await status(handle);
      assert.match(s.sinkRefused!, /inline file sink of an earlier release .* same path/);
      assert.doesNotMatch(s.sinkRefused!, /old\.json/, 'never echoes what the input carried');
      assert.equal(fake.applied.length, 0);
      fake.sinksYaml += '  old-config: {type: file, path: /srv/keeper/old.json, domains: [docs.example.com]}\n';
      await env.sleep(30 * MIN);
      s = await status(handle);
      assert.equal(s.sinkRefused, null);
      assert.equal(fake.applied.length, 1);
      await handle.terminate('test over');
    });
    // A new start with an inline sink is refused, whatever the file holds.
    const fresh = new FakeExport();
    fresh.sinksYaml += '  old-config: {type: file, path: /srv/keeper/old.json, domains: [docs.example.com]}\n';
    await withKeeper(fresh, { domain: 'docs.example.com', sink: inline }, async (handle) => {
      await env.sleep(HOUR);
      assert.match((await status(handle)).sinkRefused!, /inline file sink is refused: add it to .* under a name/);
      assert.equal(fresh.starts.length + fresh.applied.length, 0);
    });
  });

  test('a failing export keeps the keeper alive and retries with back-off', async () => {
    const fake = new FakeExport();
    fake.exportDurationMs = 5 * MIN;
    await withKeeper(fake, { domain: 'fail-docs.example.com' }, async (handle) => {
      await env.sleep(2 * HOUR);
      const s = await status(handle);
      assert.equal(s.exportsDone, 0);
      assert.match(
        s.lastError ?? '',
        /export failed: ExportFailed: static export exp_\d+ of fail-docs\.example\.com failed: render failed/,
      );
      // Back-off 1, 2, 4, 8, 16, 32, 60 min between 5-minute exports: a handful in 2 hours, not a storm.
      assert.ok(fake.starts.length >= 4 && fake.starts.length <= 8, `${fake.starts.length} export attempts`);
    });
  });

  test('PlanRequired stops the keeper with that failure', async () => {
    const fake = new FakeExport();
    fake.planRequired = true;
    await withKeeper(fake, { domain: 'docs.example.com' }, async (handle) => {
      const err = await handle.result().then(
        () => assert.fail('keeper should fail'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof WorkflowFailedError);
      assert.ok(err.cause instanceof ApplicationFailure);
      assert.equal(err.cause.type, 'PlanRequired');
      assert.match(err.cause.message, /Enterprise plan/);
      assert.equal(fake.starts.length, 1);
    });
  });

  test('deployment kind conflicts and bad input are rejected at start', async () => {
    const fake = new FakeExport();
    const taskQueue = uniqueTaskQueue('keeper-ts-invalid');
    await runWorker(env, { taskQueue, activities: fake.activities() }, async () => {
      const cases: [BundleKeeperInput, string, RegExp][] = [
        [
          { domain: 'docs.example.com', kind: 'air-gapped', sink: 'fake-file' },
          'DeploymentKindConflict',
          /needs the mirror sink/,
        ],
        [
          {
            domain: 'docs.example.com',
            kind: 'air-gapped',
            sink: 'fake-mirror',
            features: { assistant: true },
          },
          'DeploymentKindConflict',
          /cannot have AI assistant/,
        ],
        [{ domain: 'https://docs.example.com', sink: 'fake-file' }, 'InvalidInput', /without a scheme/],
      ];
      for (const [input, type, message] of cases) {
        const err = await env.client.workflow
          .execute(bundleKeeper, { taskQueue, workflowId: uniqueTaskQueue('keeper-invalid'), args: [input] })
          .then(
            () => assert.fail('should fail'),
            (e: unknown) => e,
          );
        assert.ok(err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure);
        assert.equal(err.cause.type, type);
        assert.equal(err.cause.nonRetryable, true);
        assert.match(err.cause.message, message);
      }
      assert.equal(fake.starts.length, 0);
    });
  });
});

describe('staticExport over simulated time', () => {
  test('continues as new under a poll threshold and still returns the bundle', async () => {
    const fake = new FakeExport();
    fake.exportDurationMs = 30 * MIN;
    const taskQueue = uniqueTaskQueue('export-ts');
    await runWorker(env, { taskQueue, activities: fake.activities() }, async () => {
      const handle = await env.client.workflow.start(staticExport, {
        taskQueue,
        workflowId: `export-${taskQueue}`,
        args: [{ domain: 'docs.example.com', paths: ['/guide'] }, { maxPollsPerRun: 5 }],
      });
      const result = await handle.result();
      assert.equal(result.jobId, 'exp_1');
      assert.equal(result.domain, 'docs.example.com');
      assert.equal(result.pageCount, 40);
      assert.match(result.bundleUrl, /exp_1\.tar\.gz/);
      assert.equal(result.sizeBytes, 4096);
      assert.equal(fake.starts.length, 1, 'continue-as-new did not start a second export');
      assert.notEqual((await handle.describe()).runId, handle.firstExecutionRunId);
    });
  });

  test('a failed export fails with ExportFailed, the job id and the API error', async () => {
    const fake = new FakeExport();
    fake.exportDurationMs = 3 * MIN;
    const taskQueue = uniqueTaskQueue('export-ts-fail');
    await runWorker(env, { taskQueue, activities: fake.activities() }, async () => {
      const err = await env.client.workflow
        .execute(staticExport, {
          taskQueue,
          workflowId: `export-${taskQueue}`,
          args: [{ domain: 'fail-docs.example.com' }],
        })
        .then(
          () => assert.fail('should fail'),
          (e: unknown) => e,
        );
      assert.ok(err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure);
      assert.equal(err.cause.type, 'ExportFailed');
      assert.equal(err.cause.nonRetryable, true);
      assert.match(err.cause.message, /exp_1 .*render failed/);
      assert.deepEqual(err.cause.details?.[0], {
        jobId: 'exp_1',
        domain: 'fail-docs.example.com',
        error: 'render failed: page /index threw ReferenceError',
      });
    });
  });

  test('PlanRequired fails at once, without retrying the start', async () => {
    const fake = new FakeExport();
    fake.planRequired = true;
    const taskQueue = uniqueTaskQueue('export-ts-plan');
    await runWorker(env, { taskQueue, activities: fake.activities() }, async () => {
      const err = await env.client.workflow
        .execute(staticExport, { taskQueue, workflowId: `export-${taskQueue}`, args: [{ domain: 'docs.example.com' }] })
        .then(
          () => assert.fail('should fail'),
          (e: unknown) => e,
        );
      assert.ok(err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure);
      assert.equal(err.cause.type, 'PlanRequired');
      assert.match(err.cause.message, /needs an Enterprise plan/);
      assert.equal(fake.starts.length, 1);
    });
  });

  test('invalid input fails with InvalidInput before any call', async () => {
    const fake = new FakeExport();
    const taskQueue = uniqueTaskQueue('export-ts-invalid');
    await runWorker(env, { taskQueue, activities: fake.activities() }, async () => {
      const err = await env.client.workflow
        .execute(staticExport, {
          taskQueue,
          workflowId: `export-${taskQueue}`,
          args: [{ domain: 'docs.example.com/guide', paths: [''] }],
        })
        .then(
          () => assert.fail('should fail'),
          (e: unknown) => e,
        );
      assert.ok(err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure);
      assert.equal(err.cause.type, 'InvalidInput');
      assert.match(err.cause.message, /without a path.*paths\[0\]/);
      assert.equal(fake.starts.length, 0);
    });
  });
});
