// The foundation works: a real worker on a real dev server, and 30 simulated days in seconds on the
// time-skipping server.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { SearchAttr } from '../../src/shared/search-attributes';
import { proceed, sleepForDays, waitForSignal } from '../fixtures/workflows';
import { createDevEnv, createTimeSkippingEnv, runWorker, uniqueTaskQueue } from '../helpers/temporal';

const fixtures = path.resolve(__dirname, '../fixtures/workflows.ts');

describe('dev server', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await createDevEnv();
  });
  after(async () => {
    await env?.teardown();
  });

  test('a real worker completes a workflow that waits for a signal', async () => {
    const taskQueue = uniqueTaskQueue('harness');
    const result = await runWorker(env, { taskQueue, workflowsPath: fixtures }, async () => {
      const handle = await env.client.workflow.start(waitForSignal, { taskQueue, workflowId: `harness-${taskQueue}` });
      await handle.signal(proceed);
      return handle.result();
    });
    assert.equal(result, taskQueue);
  });

  test("the project's search attributes are registered", async () => {
    const taskQueue = uniqueTaskQueue('harness-sa');
    await runWorker(env, { taskQueue, workflowsPath: fixtures }, async () => {
      const handle = await env.client.workflow.start(waitForSignal, {
        taskQueue,
        workflowId: `harness-${taskQueue}`,
        typedSearchAttributes: [{ key: SearchAttr.domain, value: 'docs.example.com' }],
      });
      await handle.signal(proceed);
      await handle.result();
      const description = await handle.describe();
      assert.equal(description.typedSearchAttributes.get(SearchAttr.domain), 'docs.example.com');
    });
  });
});

describe('time-skipping server', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await createTimeSkippingEnv();
  });
  after(async () => {
    await env?.teardown();
  });

  test('a workflow that sleeps 30 simulated days finishes in seconds', async () => {
    const taskQueue = uniqueTaskQueue('harness-ts');
    const startedAt = Date.now();
    const { elapsedMs } = await runWorker(env, { taskQueue, workflowsPath: fixtures }, () =>
      env.client.workflow.execute(sleepForDays, { taskQueue, workflowId: `sleep-${taskQueue}`, args: [30] }),
    );
    const wallMs = Date.now() - startedAt;
    assert.ok(elapsedMs >= 30 * 86_400_000, `workflow time advanced ${elapsedMs}ms`);
    assert.ok(wallMs < 30_000, `took ${wallMs}ms of wall time`);
  });
});
