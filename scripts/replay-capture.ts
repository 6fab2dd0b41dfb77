// `npm run replay:capture`: records the replay corpus (test/replay/histories) from real runs.
//
// Starts its own dev servers, the admin API emulator and an in-process worker on the current
// src/workflows, drives each scenario below to the path it names, and writes every history as the
// Temporal CLI's `workflow show --output json` does, plus index.json (type, path, file, what it covers).
// A new path is added by adding a scenario here and running this, never by editing JSON by hand.
// Continue-as-new is forced only through what the code and server already offer: the keeper's
// continueAsNewAfterCycles and the jobs' maxPollsPerRun options, and for the rate limiter (which
// only follows the server's suggestion) a second dev server whose
// limit.historyCount.suggestContinueAsNew is small.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { type Client, type WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  bundleWorkflowCode,
  DefaultLogger,
  Runtime,
  Worker,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { createActivities } from '../src/activities';
import { SinksFile } from '../src/activities/sinks-file';
import { AdminApiClient } from '../src/api/client';
import { type EmulatorHandle, startEmulator } from '../emulator';
import { noopMetrics } from '../src/observability/metrics';
import { bundleHostRules } from '../src/policies/bundle-hosts';
import {
  type AgentJobInput,
  type AgentJobOptions,
  jobIdUpdate,
  sendMessageUpdate,
  NEEDS_OPERATOR,
  agentStatusQuery,
  resolveUpdate,
} from '../src/shared/agent-job';
import {
  type AgentRateLimiterInput,
  admitPermitsUpdate,
  permitsUsedSignal,
  rateLimiterWorkflowId,
} from '../src/shared/rate-limiter';
import {
  type BundleKeeperInput,
  type KeeperStatus,
  keeperStatusQuery,
  pauseSignal,
  pinVersionSignal,
  publishSignal,
  resumeSignal,
} from '../src/shared/bundle-keeper';
import { WorkflowType } from '../src/shared/workflow-types';
import { startLocalDevServer } from '../test/helpers/temporal';
import { type WaitOptions, waitFor } from './wait';

export const HISTORIES_DIR = path.resolve(__dirname, '../test/replay/histories');
const WORKFLOWS_PATH = path.resolve(__dirname, '../src/workflows');
const KEY = 'mint_replay_capture_key_000000';
const FAST: AgentJobOptions = { poll: { floorMs: 100, fraction: 0.5, capMs: 400 } };
/** Small enough that one project's burst queues and hands slots over, large enough to stay quick. */
const RATE = { limit: 2, windowMs: 3_000 };

export interface CorpusEntry {
  type: keyof typeof WorkflowType;
  /** The path through the workflow this history takes. */
  path: string;
  /** Relative to HISTORIES_DIR. */
  file: string;
  covers: string;
  workflowId: string;
}

interface Ctx {
  client: Client;
  taskQueue: string;
  limiterQueue: string;
  emu: EmulatorHandle;
  dir: string;
  /** Projects whose first create attempt loses its worker after the API answered. */
  dies: Set<string>;
}

interface Scenario {
  type: CorpusEntry['type'];
  path: string;
  covers: string;
  /** Runs on the second server (small continue-as-new suggestion threshold). */
  suggestServer?: boolean;
  /** Drives the scenario; returns the executions to record: [name suffix, handle, runId?]. */
  run(ctx: Ctx): Promise<Recorded[]>;
}

interface Recorded {
  handle: WorkflowHandle;
  /** Default: the latest run. */
  runId?: string;
  /** Appended to the path in the file name (e.g. the continued run). */
  suffix?: string;
}

/** How long a capture waits for a workflow to reach a state. */
const waiting = (what: string): WaitOptions => ({ what, timeoutMs: 30_000, intervalMs: 100 });

let seq = 0;
const unique = (what: string) => `replay-${what}-${Date.now().toString(36)}-${++seq}`;

/**
 * One export run to its bundle, recorded. `success` and `success-local-calls` share it: the first was
 * captured before the calls became local activities, and keeps that shape until it is recaptured.
 */
const exportToBundle =
  (what: string): Scenario['run'] =>
  async (ctx) => {
    const handle = await ctx.client.workflow.start(WorkflowType.staticExport, {
      taskQueue: ctx.taskQueue,
      workflowId: unique(what),
      args: [{ domain: 'docs.example.com' }],
    });
    await handle.result();
    return [{ handle }];
  };

const agent = (ctx: Ctx, input: AgentJobInput, options: AgentJobOptions = FAST, workflowId = unique('agent')) =>
  ctx.client.workflow.start(WorkflowType.agentJob, { taskQueue: ctx.taskQueue, workflowId, args: [input, options] });

/** The captured keepers' sink: one file sink of the fleet's sinks file. */
const REPLAY_SINK = 'replay-config';
/** A sink the sinks file holds only once a scenario adds it. */
const LATER_SINK = 'replay-later';

/** The domains of the captured keepers, which their sinks serve. */
const REPLAY_DOMAINS = ['first', 'named', 'later', 'refresh', 'publish', 'pin', 'pause', 'verify', 'source', 'can'].map(
  (name) => `${name}.example.com`,
);

/** The fleets' sinks file in `dir` (KEEPER_SINKS_FILE), holding REPLAY_SINK and `more`. */
function writeReplaySinks(dir: string, more: string[] = []): string {
  const file = path.join(dir, 'sinks.json');
  const sinks = Object.fromEntries(
    [REPLAY_SINK, ...more].map((name) => [
      name,
      { type: 'file', path: path.join(dir, `${name}.json`), domains: REPLAY_DOMAINS },
    ]),
  );
  writeFileSync(file, JSON.stringify({ allowedDirs: [dir], sinks }));
  return file;
}

const keeper = (ctx: Ctx, input: Partial<BundleKeeperInput> & { domain: string }) =>
  ctx.client.workflow.start(WorkflowType.bundleKeeper, {
    taskQueue: ctx.taskQueue,
    workflowId: unique(`keeper-${input.domain}`),
    args: [
      {
        sink: REPLAY_SINK,
        ...input,
      } satisfies BundleKeeperInput,
    ],
  });

const keeperStatus = (handle: WorkflowHandle) => handle.query(keeperStatusQuery);
const until = (handle: WorkflowHandle, what: string, ok: (s: KeeperStatus) => boolean) =>
  waitFor(async () => {
    const s = await keeperStatus(handle);
    return ok(s) ? s : null;
  }, waiting(what));
const settled = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    () => undefined,
  );
const eventsOf = async (handle: WorkflowHandle) => (await handle.fetchHistory()).events ?? [];

/**
 * A keeper with a source has handled every signal sent so far and is idle: no activity or export running,
 * no publish waiting, and every update the emulator got for its project has ended in the keeper's status.
 */
async function settledAfterSignals(ctx: Ctx, handle: WorkflowHandle, projectId: string): Promise<void> {
  await waitFor(async () => {
    const events = await eventsOf(handle);
    const lastSignal = events.findLastIndex((e) => e.workflowExecutionSignaledEventAttributes);
    if (!events.slice(lastSignal).some((e) => e.workflowTaskCompletedEventAttributes)) return false;
    if (((await handle.describe()).raw.pendingActivities ?? []).length > 0) return false;
    const s = await keeperStatus(handle);
    const p = s.publishing;
    const updates = ctx.emu.updates().filter((u) => u.projectId === projectId).length;
    return (
      !s.exporting &&
      !s.exportWanted &&
      !p?.publishWanted &&
      p?.update?.status === 'success' &&
      p.updatesDone === updates
    );
  }, waiting('the keeper idle after the last signal'));
}

/** Both ends of a chain that continued as new: the first run (ends in the command) and the latest. */
async function chain(handle: WorkflowHandle): Promise<Recorded[]> {
  const latest = handle.client.getHandle(handle.workflowId);
  const started = (await latest.fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes;
  const first = started?.firstExecutionRunId;
  if (!started?.continuedExecutionRunId || !first) throw new Error(`${handle.workflowId} did not continue as new`);
  return [
    { handle, runId: first },
    { handle, runId: (await latest.describe()).runId, suffix: '.continued' },
  ];
}

export const SCENARIOS: Scenario[] = [
  // ---- agentJob ----
  {
    type: 'agentJob',
    path: 'success',
    covers: 'create, polls until completed, PR link',
    async run(ctx) {
      const handle = await agent(ctx, { projectId: unique('p'), prompt: 'Document the new endpoints' });
      await handle.result();
      return [{ handle }];
    },
  },
  {
    type: 'agentJob',
    path: 'permit-queued-then-granted',
    covers: 'the limiter queues the create (window full), permitGranted signal, then create and polls',
    async run(ctx) {
      const projectId = unique('burst');
      const handles = await Promise.all([0, 1, 2].map((i) => agent(ctx, { projectId, prompt: `Burst job ${i}` })));
      await Promise.all(handles.map((h) => h.result()));
      for (const handle of handles) {
        const events = await eventsOf(handle);
        if (events.some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'permitGranted'))
          return [{ handle }];
      }
      throw new Error('no job of the burst waited for a permitGranted signal');
    },
  },
  {
    type: 'agentJob',
    path: 'follow-up-message',
    covers: 'jobId update, sendMessage update while active, polling resumes, result',
    async run(ctx) {
      ctx.emu.configure({ agentActiveMs: 1_500 });
      try {
        const handle = await agent(ctx, { projectId: unique('msg'), prompt: 'Add a quickstart [no-change]' });
        await handle.executeUpdate(jobIdUpdate);
        await handle.executeUpdate(sendMessageUpdate, { args: ['Also link it from the home page'] });
        await handle.result();
        return [{ handle }];
      } finally {
        ctx.emu.configure({ agentActiveMs: 300 });
      }
    },
  },
  {
    type: 'agentJob',
    path: 'send-checkpoint-after-worker-died',
    covers: 'the create attempt answered, then its worker died: the recorded checkpoint is the result, never re-sent',
    async run(ctx) {
      const projectId = unique('died');
      ctx.dies.add(projectId);
      const handle = await agent(
        ctx,
        { projectId, prompt: 'Add a changelog' },
        { ...FAST, nonIdempotentCallTimeoutMs: 1_500 },
      );
      await handle.result();
      if (ctx.dies.has(projectId)) throw new Error('the simulated worker death did not happen');
      return [{ handle }];
    },
  },
  {
    type: 'agentJob',
    path: 'outcome-unknown',
    covers: 'create fails after the API committed (500): OutcomeUnknown, not retried',
    async run(ctx) {
      ctx.emu.setFaults([{ route: 'createAgentJob', kind: '500-after-commit', count: 1 }]);
      try {
        const handle = await agent(ctx, {
          projectId: unique('unknown'),
          prompt: 'Rewrite the auth guide',
          requestId: 'req-1',
        });
        await settled(handle.result());
        return [{ handle }];
      } finally {
        ctx.emu.setFaults([]);
      }
    },
  },
  {
    type: 'agentJob',
    path: 'parked-then-resolved',
    covers:
      'create fails after the API committed (500): parked (needs-operator), resolved with the created job, polled to the end',
    async run(ctx) {
      ctx.emu.setFaults([{ route: 'createAgentJob', kind: '500-after-commit', count: 1 }]);
      try {
        const projectId = unique('parked');
        const handle = await agent(ctx, { projectId, prompt: 'Rewrite the auth guide', requestId: 'req-1' });
        await waitFor(
          async () => (await handle.query(agentStatusQuery)).phase === NEEDS_OPERATOR,
          waiting('the job to park'),
        );
        const job = ctx.emu.jobs().find((j) => j.projectId === projectId);
        if (!job) throw new Error('the API did not create the job');
        await handle.executeUpdate(resolveUpdate, { args: [{ jobId: job.id }] });
        await handle.result();
        return [{ handle }];
      } finally {
        ctx.emu.setFaults([]);
      }
    },
  },
  {
    type: 'agentJob',
    path: 'failed-job',
    covers: 'the agent job ends failed: AgentJobFailed',
    async run(ctx) {
      const handle = await agent(ctx, { projectId: unique('fail'), prompt: 'Break everything [fail]' });
      await settled(handle.result());
      return [{ handle }];
    },
  },
  {
    type: 'agentJob',
    path: 'continue-as-new',
    covers: 'continues as new while polling (maxPollsPerRun), the continued run finishes',
    async run(ctx) {
      ctx.emu.configure({ agentActiveMs: 5_000 });
      try {
        const handle = await agent(
          ctx,
          { projectId: unique('can'), prompt: 'Reorganize the navigation' },
          { ...FAST, maxPollsPerRun: 2 },
        );
        await handle.result();
        return chain(handle);
      } finally {
        ctx.emu.configure({ agentActiveMs: 300 });
      }
    },
  },
  {
    type: 'agentJob',
    path: 'running-permit-queued',
    covers: 'running: the create queued at a full limiter (the ask answered queued), waiting for its grant signal',
    async run(ctx) {
      const projectId = unique('runq');
      const handles = await Promise.all([0, 1, 2].map((i) => agent(ctx, { projectId, prompt: `Queued job ${i}` })));
      const queued = await waitFor(async () => {
        for (const handle of handles)
          if ((await handle.query(agentStatusQuery)).waitingFor?.startsWith('a permit from')) return handle;
        return null;
      }, waiting('a job of the burst to queue for its permit'));
      const events = await eventsOf(queued);
      if (events.some((e) => e.workflowExecutionSignaledEventAttributes))
        throw new Error('the queued job was granted before its history was read');
      return [{ handle: queued }];
    },
  },
  {
    type: 'agentJob',
    path: 'running-granted-by-signal-polling',
    covers: 'running: the create granted by permitGranted signal, made, and the job still polling',
    async run(ctx) {
      ctx.emu.configure({ agentActiveMs: 60_000 });
      try {
        const projectId = unique('runsig');
        const handles = await Promise.all([0, 1, 2].map((i) => agent(ctx, { projectId, prompt: `Signalled ${i}` })));
        const signalled = await waitFor(async () => {
          for (const handle of handles) {
            const events = await eventsOf(handle);
            const granted = events.some(
              (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'permitGranted',
            );
            const polls = (await handle.query(agentStatusQuery)).phase === 'polling';
            if (granted && polls && events.filter((e) => e.timerFiredEventAttributes).length >= 2) return handle;
          }
          return null;
        }, waiting('a job granted by signal to poll'));
        for (const handle of handles) if (handle !== signalled) await handle.terminate('replay capture done');
        return [{ handle: signalled }];
      } finally {
        ctx.emu.configure({ agentActiveMs: 300 });
      }
    },
  },
  // ---- agentRateLimiter ----
  {
    type: 'agentRateLimiter',
    path: 'running-handed-over',
    covers:
      'running: asks answered by update (granted, queued), uses reported, the queued ones granted ahead of time by permitGranted signal; waiting',
    async run(ctx) {
      const projectId = unique('limrun');
      // Started here and asked directly, as continue-as-new-when-quiet (the replayer cannot replay
      // update-with-start); a 10 s window hands a reported slot on within 5 s.
      const handle = await ctx.client.workflow.start(WorkflowType.agentRateLimiter, {
        taskQueue: ctx.limiterQueue,
        workflowId: rateLimiterWorkflowId(projectId),
        args: [{ projectId, limit: 2, windowMs: 10_000 } satisfies AgentRateLimiterInput],
      });
      const request = (requestKey: string) => ({ requesterWorkflowId: `${projectId}-requester`, requestKey });
      await handle.executeUpdate(admitPermitsUpdate, {
        args: [['a', 'b', 'c', 'd'].map(request), { limit: 2, windowMs: 10_000 }],
      });
      await handle.signal(permitsUsedSignal, [
        { ...request('a'), usedAtMs: Date.now() },
        { ...request('b'), usedAtMs: Date.now() },
      ]);
      await waitFor(async () => {
        const signalled = (await eventsOf(handle)).filter(
          (e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName === 'permitGranted',
        );
        return signalled.length === 2;
      }, waiting('the queued asks to be granted ahead of time'));
      await waitFor(
        async () =>
          (await eventsOf(handle)).at(-1)?.workflowTaskCompletedEventAttributes !== undefined ||
          (await eventsOf(handle)).at(-1)?.timerStartedEventAttributes !== undefined,
        waiting('the limiter to wait again'),
      );
      return [{ handle }];
    },
  },
  {
    type: 'agentRateLimiter',
    path: 'queued-grants',
    covers:
      'a burst over the window: admitted, queued, granted by signal (handed over ahead of time), completes when idle',
    async run(ctx) {
      const projectId = unique('limq');
      const handles = await Promise.all(
        [0, 1, 2, 3, 4].map((i) => agent(ctx, { projectId, prompt: `Queued job ${i}` })),
      );
      await Promise.all(handles.map((h) => h.result()));
      const limiter = ctx.client.workflow.getHandle(rateLimiterWorkflowId(projectId));
      await limiter.result();
      const events = await eventsOf(limiter);
      const handedOver = events.some(
        (e) =>
          e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName === 'permitGranted' &&
          (e.signalExternalWorkflowExecutionInitiatedEventAttributes.input?.payloads?.length ?? 0) > 1,
      );
      if (!handedOver) throw new Error('the burst was granted without a hand-over ahead of time');
      return [{ handle: limiter }];
    },
  },
  {
    type: 'agentRateLimiter',
    path: 'continue-as-new',
    covers:
      'the server suggests continue-as-new (limit.historyCount.suggestContinueAsNew): state carried, grants go on',
    suggestServer: true,
    async run(ctx) {
      const projectId = unique('limcan');
      for (let i = 0; i < 4; i++) {
        const handles = await Promise.all([0, 1].map((j) => agent(ctx, { projectId, prompt: `Job ${i}.${j}` })));
        await Promise.all(handles.map((h) => h.result()));
      }
      const limiter = ctx.client.workflow.getHandle(rateLimiterWorkflowId(projectId));
      await limiter.result();
      return chain(limiter);
    },
  },
  {
    type: 'agentRateLimiter',
    path: 'continue-as-new-when-quiet',
    covers:
      "asks answered by update, uses reported, then 5 s quiet past a fifth of its history budget: continues as new (patched 'limiter-compact-when-quiet')",
    async run(ctx) {
      const projectId = unique('limquiet');
      // Started here and asked directly (not by jobs' update-with-start, which the replayer cannot
      // replay); asks without a worker's limit keep the 60 s window, so it is quiet before it is idle.
      const handle = await ctx.client.workflow.start(WorkflowType.agentRateLimiter, {
        taskQueue: ctx.limiterQueue,
        workflowId: rateLimiterWorkflowId(projectId),
        args: [{ projectId, limit: 5, windowMs: 60_000, maxHistoryEvents: 50 } satisfies AgentRateLimiterInput],
      });
      for (const requestKey of ['a', 'b', 'c']) {
        const request = { requesterWorkflowId: `${projectId}-requester`, requestKey };
        await handle.executeUpdate(admitPermitsUpdate, { args: [[request]] });
        await handle.signal(permitsUsedSignal, [{ ...request, usedAtMs: Date.now() }]);
      }
      await waitFor(
        async () => (await handle.describe()).runId !== handle.firstExecutionRunId,
        waiting('the quiet limiter to continue as new'),
      );
      return chain(handle);
    },
  },
  // ---- staticExport ----
  {
    type: 'staticExport',
    path: 'success',
    covers: 'start, polls through queued and running, bundle',
    run: exportToBundle('export'),
  },
  {
    type: 'staticExport',
    path: 'success-local-calls',
    covers: "start, polls and bundle, every call a local activity (patched 'export-calls-local')",
    run: exportToBundle('export-local'),
  },
  {
    type: 'staticExport',
    path: 'failure',
    covers: 'the export fails: ExportFailed with the job id',
    async run(ctx) {
      const handle = await ctx.client.workflow.start(WorkflowType.staticExport, {
        taskQueue: ctx.taskQueue,
        workflowId: unique('export-fail'),
        args: [{ domain: 'fail-docs.example.com' }],
      });
      await settled(handle.result());
      return [{ handle }];
    },
  },
  {
    type: 'staticExport',
    path: 'continue-as-new',
    covers: 'continues as new while polling (maxPollsPerRun), the continued run bundles',
    async run(ctx) {
      ctx.emu.configure({ exportDurationMs: 5_000 });
      try {
        const handle = await ctx.client.workflow.start(WorkflowType.staticExport, {
          taskQueue: ctx.taskQueue,
          workflowId: unique('export-can'),
          args: [{ domain: 'docs.example.com', paths: ['/guide'] }, { maxPollsPerRun: 2 }],
        });
        await handle.result();
        return chain(handle);
      } finally {
        ctx.emu.configure({ exportDurationMs: 1_000 });
      }
    },
  },
  // ---- bundleKeeper ----
  {
    type: 'bundleKeeper',
    path: 'first-apply',
    covers: 'export child, bundle, verify, apply to the file sink',
    async run(ctx) {
      const handle = await keeper(ctx, { domain: 'first.example.com' });
      await until(handle, 'first apply', (s) => s.jobId !== null);
      return [{ handle }];
    },
  },
  {
    type: 'bundleKeeper',
    path: 'named-sink-refresh',
    covers: 'the sink resolved by name (resolveSink), the first apply and a refresh through it',
    async run(ctx) {
      const handle = await keeper(ctx, { domain: 'named.example.com' });
      await until(handle, 'a refresh', (s) => s.refreshesDone >= 1);
      return [{ handle }];
    },
  },
  {
    type: 'bundleKeeper',
    path: 'named-sink-refused-then-resumed',
    covers: 'a sink the worker does not hold: refused, checked again, applied once the sinks file holds it',
    async run(ctx) {
      const handle = await keeper(ctx, { domain: 'later.example.com', sink: LATER_SINK });
      await until(handle, 'the sink refused', (s) => Boolean(s.sinkRefused));
      writeReplaySinks(ctx.dir, [LATER_SINK]);
      await until(handle, 'the first apply once the file holds the sink', (s) => s.jobId !== null);
      return [{ handle }];
    },
  },
  {
    type: 'bundleKeeper',
    path: 'refresh-before-expiry',
    covers: 'fresh links generated, verified and applied before the live one expires',
    async run(ctx) {
      const handle = await keeper(ctx, { domain: 'refresh.example.com' });
      await until(handle, 'two refreshes', (s) => s.refreshesDone >= 2);
      return [{ handle }];
    },
  },
  {
    type: 'bundleKeeper',
    path: 'publish-during-export',
    covers: 'publish signals while an export runs coalesce into one follow-up export',
    async run(ctx) {
      const handle = await keeper(ctx, { domain: 'publish.example.com' });
      await until(handle, 'first apply', (s) => s.jobId !== null);
      ctx.emu.configure({ exportDurationMs: 2_500 });
      try {
        await handle.signal(publishSignal);
        await until(handle, 'the publish export to run', (s) => s.exporting === true);
        await handle.signal(publishSignal);
        await handle.signal(publishSignal);
        await until(
          handle,
          'the coalesced follow-up export',
          (s) => s.exportsDone >= 3 && !s.exporting && !s.exportWanted,
        );
      } finally {
        ctx.emu.configure({ exportDurationMs: 1_000 });
      }
      return [{ handle }];
    },
  },
  {
    type: 'bundleKeeper',
    path: 'pin',
    covers: 'pin signal: exports that version and applies it',
    async run(ctx) {
      const handle = await keeper(ctx, { domain: 'pin.example.com' });
      await until(handle, 'first apply', (s) => s.jobId !== null);
      await handle.signal(pinVersionSignal, 'v2');
      await until(handle, 'the pinned version applied', (s) => s.version === 'v2' && s.exportsDone >= 2);
      return [{ handle }];
    },
  },
  {
    type: 'bundleKeeper',
    path: 'pause-resume',
    covers: 'pause remembers a publish without exporting; resume exports it',
    async run(ctx) {
      const handle = await keeper(ctx, { domain: 'pause.example.com' });
      await until(handle, 'first apply', (s) => s.jobId !== null);
      await handle.signal(pauseSignal);
      await handle.signal(publishSignal);
      await until(handle, 'paused with a publish remembered', (s) => s.paused && s.exportWanted === true);
      await handle.signal(resumeSignal);
      await until(handle, 'the remembered publish exported', (s) => !s.paused && s.exportsDone >= 2);
      return [{ handle }];
    },
  },
  {
    type: 'bundleKeeper',
    path: 'failed-verification',
    covers:
      'a new bundle fails verification (its download keeps failing): not applied, the old config stays, retry planned',
    async run(ctx) {
      const handle = await keeper(ctx, { domain: 'verify.example.com' });
      await until(handle, 'first apply', (s) => s.jobId !== null);
      ctx.emu.setFaults([{ route: 'downloadBundle', kind: '500-before-commit', count: 10 }]);
      try {
        await handle.signal(publishSignal);
        await until(handle, 'the verification failure', (s) => /not applied/.test(s.lastError ?? ''));
      } finally {
        ctx.emu.setFaults([]);
      }
      return [{ handle }];
    },
  },
  {
    type: 'bundleKeeper',
    path: 'publish-with-source',
    covers:
      'a keeper with a source: publishes trigger a deployment update, polled to success, then export and apply; a redelivery changes nothing',
    async run(ctx) {
      const source = { projectId: 'replay-pub', repository: 'https://github.com/acme/docs', ref: 'main' };
      ctx.emu.push({ projectId: source.projectId, domain: 'source.example.com', sha: 'a'.repeat(40) });
      const handle = await keeper(ctx, { domain: 'source.example.com', source });
      await until(handle, 'first apply', (s) => s.jobId !== null);
      const request = { repository: source.repository, ref: 'refs/heads/main', sha: 'a'.repeat(40), deliveryId: 'd-1' };
      await handle.signal(publishSignal, request);
      await handle.signal(publishSignal, request);
      await handle.signal(publishSignal, {
        ...request,
        deliveryId: 'd-2',
        pullRequest: { number: 1, url: `${source.repository}/pull/1` },
      });
      await until(handle, 'the built commit applied', (s) => s.publishing?.commit?.sha === request.sha);
      return [{ handle }];
    },
  },
  {
    type: 'bundleKeeper',
    path: 'publish-replay-of-built-commit',
    covers:
      "a keeper with a source: commits A then B built and applied, then A's publish again under a new delivery id " +
      "(a replayed push): the release before patched 'publish-built-commit-once' built the branch again, today's " +
      'code starts nothing',
    async run(ctx) {
      const source = { projectId: 'replay-again', repository: 'https://github.com/acme/again', ref: 'main' };
      const [a, b] = ['a', 'b'].map((c) => c.repeat(40)) as [string, string];
      ctx.emu.push({ projectId: source.projectId, domain: 'again.example.com', sha: a });
      const handle = await keeper(ctx, { domain: 'again.example.com', source });
      await until(handle, 'first apply', (s) => s.jobId !== null);
      const publish = (sha: string, deliveryId: string) =>
        handle.signal(publishSignal, { repository: source.repository, ref: 'main', sha, deliveryId });
      await publish(a, 'd-1');
      await until(handle, 'A applied', (s) => s.publishing?.commit?.sha === a);
      ctx.emu.push({ projectId: source.projectId, sha: b });
      await publish(b, 'd-2');
      await until(handle, 'B applied', (s) => s.publishing?.commit?.sha === b);
      await publish(a, 'd-3');
      await settledAfterSignals(ctx, handle, source.projectId);
      return [{ handle }];
    },
  },
  {
    type: 'bundleKeeper',
    path: 'continue-as-new',
    covers:
      'continues as new between cycles (continueAsNewAfterCycles), carrying its state; the continued run refreshes',
    async run(ctx) {
      const handle = await keeper(ctx, { domain: 'can.example.com', continueAsNewAfterCycles: 1 });
      await waitFor(async () => {
        const d = await ctx.client.workflow.getHandle(handle.workflowId).describe();
        return d.runId !== handle.firstExecutionRunId && (await keeperStatus(handle)).refreshesDone >= 1;
      }, waiting('the keeper to continue as new and refresh'));
      return chain(handle);
    },
  },
];

interface Fleet {
  ctx: Ctx;
  close(): Promise<void>;
}

async function fleet(
  env: TestWorkflowEnvironment,
  bundle: WorkflowBundleWithSourceMap,
  emu: EmulatorHandle,
  dir: string,
): Promise<Fleet> {
  const taskQueue = unique('capture');
  const limiterQueue = `${taskQueue}-limiter`;
  const api = new AdminApiClient({ baseUrl: emu.url, apiKey: KEY });
  const dies = new Set<string>();
  const sinksFile = writeReplaySinks(dir);
  const real = createActivities({
    api,
    metrics: noopMetrics,
    temporal: env.client,
    agentRateLimit: RATE,
    limiterTaskQueue: limiterQueue,
    sinks: new SinksFile(sinksFile),
    bundleHosts: bundleHostRules(emu.url, []),
  });
  const connection = env.nativeConnection;
  const namespace = env.namespace ?? 'default';
  const workers = [
    await Worker.create({
      connection,
      namespace,
      taskQueue,
      workflowBundle: bundle,
      activities: {
        ...real,
        // A worker that dies after the API answered: the real activity records its checkpoint, then the
        // attempt never returns and times out.
        async createAgentJob(input: Parameters<typeof real.createAgentJob>[0]) {
          if (!dies.delete(input.projectId)) return real.createAgentJob(input);
          await real.createAgentJob(input);
          await Context.current().sleep(30_000);
          throw new Error('the simulated dead worker woke up');
        },
      },
    }),
    await Worker.create({ connection, namespace, taskQueue: limiterQueue, workflowBundle: bundle }),
    // The older fleet's limiter queue of the hand-over scenario.
    await Worker.create({ connection, namespace, taskQueue: `${limiterQueue}-old`, workflowBundle: bundle }),
  ];
  const running = workers.map((w) => w.run());
  return {
    ctx: { client: env.client, taskQueue, limiterQueue, emu, dir, dies },
    async close() {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.allSettled(running);
      await api.close();
    },
  };
}

export async function capture(
  only?: (s: Scenario) => boolean,
  log: (line: string) => void = console.log,
): Promise<{ entries: CorpusEntry[]; failed: string[] }> {
  Runtime.install({
    logger: new DefaultLogger('ERROR'),
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
  });
  const scenarios = SCENARIOS.filter(only ?? (() => true));
  const bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN') });
  const emu = await startEmulator({
    agentActiveMs: 300,
    exportQueuedMs: 200,
    exportDurationMs: 1_000,
    updateQueuedMs: 100,
    updateBuildMs: 1_000,
    bundleTtlMs: 8_000,
  });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'replay-capture-'));
  const envs: TestWorkflowEnvironment[] = [];
  const fleets: Fleet[] = [];
  const entries: CorpusEntry[] = [];
  const failed: string[] = [];
  try {
    const plain = await startLocalDevServer();
    envs.push(plain);
    const plainFleet = await fleet(plain, bundle, emu, dir);
    fleets.push(plainFleet);
    let suggestFleet: Fleet | undefined;
    for (const scenario of scenarios) {
      if (scenario.suggestServer && !suggestFleet) {
        const suggest = await startLocalDevServer(['limit.historyCount.suggestContinueAsNew=30']);
        envs.push(suggest);
        suggestFleet = await fleet(suggest, bundle, emu, dir);
        fleets.push(suggestFleet);
      }
      const { ctx } = scenario.suggestServer ? suggestFleet! : plainFleet;
      const startedAt = Date.now();
      let recorded: Recorded[];
      try {
        recorded = await scenario.run(ctx);
      } catch (err) {
        // The others are still worth recording; the run fails at the end.
        failed.push(`${scenario.type}/${scenario.path}: ${err instanceof Error ? err.message : String(err)}`);
        log(`FAILED ${failed.at(-1)}`);
        continue;
      }
      for (const { handle, runId, suffix = '' } of recorded) {
        const history = await ctx.client.workflow.getHandle(handle.workflowId, runId).fetchHistory();
        const file = path.join(scenario.type, `${scenario.path}${suffix}.json`);
        mkdirSync(path.join(HISTORIES_DIR, scenario.type), { recursive: true });
        writeFileSync(
          path.join(HISTORIES_DIR, file),
          `${JSON.stringify(JSON.parse(historyToJSON(history)), null, 2)}\n`,
        );
        entries.push({
          type: scenario.type,
          path: `${scenario.path}${suffix}`,
          file,
          covers: scenario.covers,
          workflowId: handle.workflowId,
        });
      }
      log(`${scenario.type}/${scenario.path}: ${recorded.length} history file(s) in ${Date.now() - startedAt} ms`);
      // Long-lived ones end here: the corpus holds what they did so far.
      for (const { handle } of recorded) await handle.terminate('replay capture done').catch(() => undefined);
    }
  } finally {
    for (const f of fleets) await f.close();
    for (const env of envs) await env.teardown();
    await emu.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return { entries, failed };
}

async function main(): Promise<void> {
  const filter = process.argv[2];
  const { entries, failed } = await capture(filter ? (s) => `${s.type}/${s.path}`.includes(filter) : undefined);
  const indexFile = path.join(HISTORIES_DIR, 'index.json');
  let kept: CorpusEntry[] = [];
  if (filter) {
    // A partial capture keeps the other entries.
    if (existsSync(indexFile))
      kept = (JSON.parse(readFileSync(indexFile, 'utf8')) as CorpusEntry[]).filter(
        (e) => !entries.some((n) => n.file === e.file),
      );
  }
  const all = [...kept, ...entries].sort((a, b) => a.file.localeCompare(b.file));
  writeFileSync(indexFile, `${JSON.stringify(all, null, 2)}\n`);
  console.log(
    `wrote ${entries.length} histories; index has ${all.length} (${path.relative(process.cwd(), indexFile)})`,
  );
  if (failed.length > 0) throw new Error(`${failed.length} scenario(s) failed:\n${failed.join('\n')}`);
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err instanceof Error ? err.stack : String(err));
      process.exit(1);
    },
  );
}
