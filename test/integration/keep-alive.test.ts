// API activities run under a short heartbeat timeout (ACTIVITY_HEARTBEAT_TIMEOUT_MS), so a task lost on
// its way to a worker is retried in seconds instead of after its whole start-to-close timeout. The
// product's worker keeps the attempts it does run alive: a slow call is not cut off and re-sent.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { type EmulatorHandle, startEmulator } from '../../emulator';
import { ACTIVITY_HEARTBEAT_TIMEOUT_MS, WorkflowType } from '../../src/shared';
import type { DocsAdminWorker } from '../../src/worker';
import { createDevEnv, startDocsAdminWorker, uniqueTaskQueue } from '../helpers/temporal';

const KEY = 'mint_keep_alive_key_0123456789';

describe('activity keep-alive', () => {
  let env: TestWorkflowEnvironment;
  let emu: EmulatorHandle;
  let worker: DocsAdminWorker;
  const taskQueue = uniqueTaskQueue('keep-alive');

  before(async () => {
    env = await createDevEnv();
    emu = await startEmulator({ exportQueuedMs: 100, exportDurationMs: 300 });
    worker = await startDocsAdminWorker(env, {
      ADMIN_API_URL: emu.url,
      ADMIN_API_KEY: KEY,
      TEMPORAL_TASK_QUEUE: taskQueue,
    });
  });
  after(async () => {
    await worker?.close();
    await emu?.close();
    await env?.teardown();
  });

  test('a call slower than the heartbeat timeout completes in its first attempt: one export started', async () => {
    const delayMs = ACTIVITY_HEARTBEAT_TIMEOUT_MS + 3_000;
    emu.setFaults([{ route: 'startExport', kind: 'slow', count: 1, delayMs }]);
    const handle = await env.client.workflow.start(WorkflowType.staticExport, {
      taskQueue,
      workflowId: `keep-alive-${taskQueue}`,
      args: [{ domain: 'keep-alive.docs.example.com' }],
    });
    await handle.result();
    assert.equal(emu.counters().faultsInjected.slow, 1, 'the first start was slow');
    assert.equal(emu.counters().exportsStarted, 1, 'the slow start was not cut off and sent again');
    const events = (await handle.fetchHistory()).events ?? [];
    const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'startExport');
    const started = events.find(
      (e) => String(e.activityTaskStartedEventAttributes?.scheduledEventId) === String(scheduled?.eventId),
    );
    assert.equal(started?.activityTaskStartedEventAttributes?.attempt, 1, 'one attempt');
  });
});
