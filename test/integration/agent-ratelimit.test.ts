// test-lane: alone (a 300-job burst: its fairness, 429 and history-budget checks are what a busy machine skews)
// Per-project rate limiting across the fleet: 300 agent jobs for one project and 10 for another,
// against the emulator's window scaled down to 100 per 10 s (AGENT_RATE_LIMIT 100/10s). The limiter
// workflow's own tests, which a busy machine does not skew, are in limiter-workflow.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { runRateLimitDrain } from '../../bench/rate-limit-drain';
import { LIMITER_HISTORY_EVENTS } from '../../src/activities/limiter-client';
import { type AgentRateLimiterInput, rateLimiterWorkflowId } from '../../src/shared/rate-limiter';
import { createDevEnv } from '../helpers/temporal';

describe('agent rate limiting', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await createDevEnv();
  });
  after(async () => {
    await env?.teardown();
  });

  test('a burst of 300 + 10 jobs completes with (almost) no 429s, and the other project is not held behind it', async () => {
    const figures = await runRateLimitDrain({
      env,
      jobs: 300,
      otherJobs: 10,
      limit: 100,
      windowMs: 10_000,
      agentActiveMs: 1_000,
      log: () => undefined,
    });
    process.stdout.write(
      `# rate-limit drain: ${figures.drainMs} ms for ${figures.jobs} jobs (theoretical minimum ${figures.theoreticalMinMs} ms, ` +
        `ratio ${figures.drainRatio}); 429s ${figures.rateLimited}/${figures.createCalls} creates; ` +
        `second window of the burst from ${figures.secondWindowCreateMs} ms; other project's creates at ` +
        `${figures.other.createMs.join(', ')} ms, completions at ${figures.other.completionMs.join(', ')} ms; ` +
        `limiter: ${figures.limiter.workflowTasks} tasks, ${figures.limiter.events} events, ${figures.limiter.runs} run(s)\n`,
    );
    assert.equal(figures.failed, 0);
    assert.equal(figures.completed, 310);
    assert.equal(figures.limiter.lostGrants, 0);
    // The workers start a limiter with a history budget that holds the burst (about 1,000 events):
    // a run that ended mid-burst would first wait for its grants' deliveries, handing nothing over.
    const limiterRun = await env.client.workflow.getHandle(rateLimiterWorkflowId(figures.burstProject)).fetchHistory();
    const started = limiterRun.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    assert.ok(started, 'the limiter run has its start input');
    const input = defaultPayloadConverter.fromPayload<AgentRateLimiterInput>(started);
    assert.equal(input.maxHistoryEvents, LIMITER_HISTORY_EVENTS);
    assert.ok(figures.limiter.events < LIMITER_HISTORY_EVENTS, `${figures.limiter.events} events in the burst`);
    // A count, not a timing: at most 1% of create calls answered 429.
    assert.ok(
      figures.rateLimited <= Math.floor(figures.createCalls * 0.01),
      `${figures.rateLimited} of ${figures.createCalls} creates got 429`,
    );
    // The limiter never lets the burst start its second window before the first window has passed.
    assert.ok(
      figures.secondWindowCreateMs !== null && figures.secondWindowCreateMs >= figures.windowMs,
      `second window at ${figures.secondWindowCreateMs} ms`,
    );
    // Fairness: every one of the other project's jobs was created before the burst's second window
    // opened, i.e. none of them queued behind the burst's permits.
    assert.ok(
      figures.other.maxCreateMs < figures.secondWindowCreateMs,
      `other project's last create at ${figures.other.maxCreateMs} ms, burst's second window at ${figures.secondWindowCreateMs} ms`,
    );
  });
});
