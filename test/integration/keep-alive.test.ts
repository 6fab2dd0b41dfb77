// test-lane: parallel
// Activity tasks that call the API run under a short heartbeat timeout (ACTIVITY_HEARTBEAT_TIMEOUT_MS),
// so a task lost on its way to a worker is retried in seconds instead of after its whole start-to-close
// timeout. The product's worker keeps the attempts it does run alive, so a slow call is not cut off and
// sent again: the worker's activity interceptor for plain calls (the keeper's link refresh) and for the
// keeper's verify and apply through their silences (a `helm upgrade` says nothing for minutes), repeating
// their last progress; the send checkpoints for a create (never sent twice).
import assert from 'node:assert/strict';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { temporal } from '@temporalio/proto';
import { defaultPayloadConverter } from '@temporalio/common';
import { tsToMs } from '@temporalio/common/lib/time';
import type { WorkflowHandle } from '@temporalio/client';
import { ensureKeeper } from '../../src/client';
import type { EmulatorHandle } from '../../emulator';
import { ACTIVITY_HEARTBEAT_TIMEOUT_MS } from '../../src/shared/heartbeat';
import { WorkflowType } from '../../src/shared/workflow-types';
import { keeperStatusQuery } from '../../src/shared/bundle-keeper';
import { type DocsAdminStack, createDevEnv, startDocsAdminStack, uniqueTaskQueue, waitFor } from '../helpers/temporal';
import { writeSinksFile } from '../helpers/sinks';

const KEY = 'mint_keep_alive_key_0123456789';
/** Slower than the heartbeat timeout: without a keep-alive the attempt would time out and run again. */
const SLOW_MS = ACTIVITY_HEARTBEAT_TIMEOUT_MS + 3_000;
/** Links live 30 s: refreshed 9 s after they came (REFRESH_FRACTION), a slow refresh still ends before expiry. */
const LINK_TTL_MS = 30_000;
/** Refresh 70 % of a lifetime before expiry: soon after the first link, with time to set the slow fault first. */
const REFRESH_FRACTION = 0.7;

/** The attempt number of each started activity task of `type` in a history. */
function attemptsOf(events: temporal.api.history.v1.IHistoryEvent[], type: string): number[] {
  const scheduled = new Set(
    events
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === type)
      .map((e) => String(e.eventId)),
  );
  return events
    .filter((e) => scheduled.has(String(e.activityTaskStartedEventAttributes?.scheduledEventId)))
    .map((e) => e.activityTaskStartedEventAttributes!.attempt ?? 0);
}

/**
 * The heartbeat details of a running `type` attempt once one was stored 5 s or more after the attempt
 * started (by then only the keep-alive heartbeats), else null.
 */
async function keptHeartbeatDetails(handle: WorkflowHandle, type: string): Promise<{ details: unknown } | null> {
  const pending = (await handle.describe()).raw.pendingActivities ?? [];
  const attempt = pending.find((p) => p.activityType?.name === type);
  if (!attempt?.lastStartedTime || !attempt.lastHeartbeatTime) return null;
  if (tsToMs(attempt.lastHeartbeatTime) - tsToMs(attempt.lastStartedTime) < 5_000) return null;
  const [payload] = attempt.heartbeatDetails?.payloads ?? [];
  return { details: payload ? defaultPayloadConverter.fromPayload(payload) : undefined };
}

describe('activity keep-alive', () => {
  let env: TestWorkflowEnvironment;
  let stack: DocsAdminStack;
  let emu: EmulatorHandle;
  let dir: string;
  const taskQueue = uniqueTaskQueue('keep-alive');

  before(async () => {
    env = await createDevEnv();
    dir = await fsp.mkdtemp(path.join(tmpdir(), 'keep-alive-'));
    // The command sink: one line of progress, then silent for longer than the heartbeat timeout, then applies.
    const script = `process.stderr.write('unpacking\\n'); setTimeout(() => require('fs').writeFileSync(process.argv[1], require('fs').readFileSync(0)), ${SLOW_MS})`;
    const sinksFile = await writeSinksFile(dir, {
      'keep-alive-file': { type: 'file', path: path.join(dir, 'docs.json'), domains: ['keep-alive.docs.example.com'] },
      'slow-command': {
        type: 'command',
        argv: [process.execPath, '-e', script, path.join(dir, 'applied.json')],
        domains: ['keep-alive-apply.docs.example.com'],
      },
    });
    stack = await startDocsAdminStack(
      env,
      { exportQueuedMs: 100, exportDurationMs: 300, bundleTtlMs: LINK_TTL_MS },
      { ADMIN_API_KEY: KEY, TEMPORAL_TASK_QUEUE: taskQueue, KEEPER_SINKS_FILE: sinksFile },
    );
    emu = stack.emu;
  });
  after(async () => {
    await stack?.close();
    await env?.teardown();
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
  });

  test('a link refresh slower than the heartbeat timeout completes in its first attempt', async () => {
    const handle = await ensureKeeper(
      env.client,
      {
        domain: 'keep-alive.docs.example.com',
        sink: 'keep-alive-file',
        refreshMargin: { fraction: REFRESH_FRACTION, minMs: 1_000 },
      },
      { taskQueue },
    );
    try {
      await waitFor(async () => (await handle.query(keeperStatusQuery)).jobId, {
        timeoutMs: 30_000,
        what: 'the first bundle applied',
      });
      // The first link came with the export; the next generateBundle call is the keeper's refresh.
      const slowBefore = emu.counters().faultsInjected.slow ?? 0;
      emu.setFaults([{ route: 'generateBundle', kind: 'slow', count: 1, delayMs: SLOW_MS }]);
      const refreshed = await waitFor(
        async () => ((await handle.query(keeperStatusQuery)).refreshesDone >= 1 ? true : null),
        { timeoutMs: LINK_TTL_MS + SLOW_MS, what: 'the slow refresh' },
      );
      assert.ok(refreshed);
      assert.equal(emu.counters().faultsInjected.slow, slowBefore + 1, 'the refresh was slow');
      const events = (await handle.fetchHistory()).events ?? [];
      assert.deepEqual(attemptsOf(events, 'generateBundle'), [1], 'one refresh attempt, not cut off');
    } finally {
      emu.setFaults([]);
      await handle.terminate('test finished').catch(() => undefined);
    }
  });

  // The apply (a command sink) and the create (a fault on createAgentJob only) touch nothing of each
  // other's and wait the same 13 s: side by side. The refresh above runs alone: its slow fault is on
  // generateBundle, which the apply's export calls too.
  describe('the apply and the create, side by side', { concurrency: true }, () => {
    test('a silent apply slower than the heartbeat timeout completes in its first attempt, its progress kept', async () => {
      const applied = path.join(dir, 'applied.json');
      const handle = await ensureKeeper(
        env.client,
        { domain: 'keep-alive-apply.docs.example.com', sink: 'slow-command' },
        { taskQueue },
      );
      try {
        // A keep-alive heartbeat stored well into the silence still carries the progress recorded before it.
        const { details } = await waitFor(() => keptHeartbeatDetails(handle, 'applyBundle'), {
          timeoutMs: 30_000 + SLOW_MS,
          what: 'a keep-alive heartbeat of the silent apply',
        });
        assert.deepEqual(details, { stderrBytes: 'unpacking\n'.length }, 'the last progress, not an empty heartbeat');
        const status = await waitFor(
          async () => {
            const s = await handle.query(keeperStatusQuery);
            return s.jobId ? s : null;
          },
          { timeoutMs: 30_000 + SLOW_MS, what: 'the slow apply' },
        );
        const document = JSON.parse(await fsp.readFile(applied, 'utf8')) as { staticExport: { bundleUrl: string } };
        assert.equal(document.staticExport.bundleUrl, status.bundleUrl, 'the command got the applied link');
        const events = (await handle.fetchHistory()).events ?? [];
        assert.deepEqual(attemptsOf(events, 'applyBundle'), [1], 'one apply attempt, not cut off');
        // A task lost on its way to a worker is retried after this, not after the 15-minute start-to-close.
        for (const type of ['verifyBundle', 'applyBundle']) {
          const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === type);
          assert.equal(
            tsToMs(scheduled?.activityTaskScheduledEventAttributes?.heartbeatTimeout),
            ACTIVITY_HEARTBEAT_TIMEOUT_MS,
            `${type} runs under the short heartbeat timeout`,
          );
        }
      } finally {
        await handle.terminate('test finished').catch(() => undefined);
      }
    });

    test('a create slower than the heartbeat timeout completes in its first attempt: one job created', async () => {
      const slowBefore = emu.counters().faultsInjected.slow ?? 0;
      emu.setFaults([{ route: 'createAgentJob', kind: 'slow', count: 1, delayMs: SLOW_MS }]);
      const prompt = `Keep-alive create (${taskQueue})`;
      try {
        const handle = await env.client.workflow.start(WorkflowType.agentJob, {
          taskQueue,
          workflowId: `keep-alive-agent-${taskQueue}`,
          args: [{ projectId: 'keep-alive', prompt }],
        });
        await handle.result();
        assert.equal(emu.counters().faultsInjected.slow, slowBefore + 1, 'the create was slow');
        assert.equal(emu.jobs().filter((j) => j.prompt === prompt).length, 1, 'the slow create was not sent again');
        const events = (await handle.fetchHistory()).events ?? [];
        assert.deepEqual(attemptsOf(events, 'createAgentJob'), [1], 'one create attempt');
      } finally {
        emu.setFaults([]);
      }
    });
  });
});
