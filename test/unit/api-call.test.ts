// test-lane: parallel
// callAdminApi in an activity context (MockActivityEnvironment) against the in-process emulator.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DefaultLogger } from '@temporalio/worker';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { AdminApiClient } from '../../src/api/client';
import type { AgentJob } from '../../src/api/types';
import { callAdminApi } from '../../src/activities/api-call';
import { type EmulatorHandle, startEmulator } from '../../emulator';
import { waitFor } from '../../scripts/wait';

// The mock environment logs every failed activity; keep the output for real problems.
const mockEnv = (): MockActivityEnvironment =>
  new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });
const KEY = 'mint_api_call_unit_key_5521';
let emu: EmulatorHandle;
let client: AdminApiClient;

before(async () => {
  emu = await startEmulator({ rateLimit: { limit: 1, windowMs: 60_000 } });
  client = new AdminApiClient({ baseUrl: emu.url, apiKey: KEY, logger: { warn: () => undefined } });
});
after(async () => {
  await client.close();
  await emu.close();
});

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof ApplicationFailure, `expected ApplicationFailure, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a failure');
}

describe('callAdminApi', () => {
  test('returns the value and passes the activity cancellation signal', async () => {
    const env = mockEnv();
    let seen: AbortSignal | undefined;
    const job = (await env.run(() =>
      callAdminApi('createAgentJob', (signal) => {
        seen = signal;
        return client.createAgentJob('p', 'hello', { signal });
      }),
    )) as AgentJob;
    assert.equal(job.status, 'active');
    assert.equal(seen, env.context.cancellationSignal);
  });

  test('maps AdminApiError to ApplicationFailure once: NotFound is non-retryable, keeps the API text', async () => {
    const env = mockEnv();
    const failure = await failureOf(
      env.run(() => callAdminApi('getAgentJob', (signal) => client.getAgentJob('p', 'aj_nope', { signal }))),
    );
    assert.equal(failure.type, 'NotFound');
    assert.equal(failure.nonRetryable, true);
    assert.match(failure.message, /^getAgentJob: HTTP 404: agent job aj_nope not found$/);
  });

  test('429 -> retryable RateLimited with nextRetryDelay from Retry-After', async () => {
    const env = mockEnv();
    // The budget of 1 was used by the first test.
    const failure = await failureOf(
      env.run(() => callAdminApi('createAgentJob', (signal) => client.createAgentJob('p', 'again', { signal }))),
    );
    assert.equal(failure.type, 'RateLimited');
    assert.equal(failure.nonRetryable, false);
    assert.ok(
      typeof failure.nextRetryDelay === 'number' && failure.nextRetryDelay > 50_000 && failure.nextRetryDelay <= 60_000,
    );
  });

  test('activity cancellation aborts the HTTP call and surfaces as CancelledFailure', async () => {
    emu.setFaults([{ route: 'getExport', kind: 'slow', count: 1, delayMs: 3_000 }]);
    const env = mockEnv();
    const started = Date.now();
    const running = env.run(() => callAdminApi('getExport', (signal) => client.getExport('exp_x', { signal })));
    await waitFor(() => emu.counters().faultsInjected.slow, {
      what: 'the call to reach the emulator',
      timeoutMs: 2_000,
      intervalMs: 10,
    });
    env.cancel('CANCELLED');
    await assert.rejects(running, (err) => err instanceof CancelledFailure);
    assert.ok(Date.now() - started < 2_500, 'cancellation did not abort the call');
  });

  test('other errors pass through unchanged; outside an activity it still maps', async () => {
    const own = ApplicationFailure.create({ type: 'InvalidInput', message: 'bad', nonRetryable: true });
    await assert.rejects(
      callAdminApi('x', () => Promise.reject(own)),
      (err) => err === own,
    );
    const bug = new TypeError('oops');
    await assert.rejects(
      callAdminApi('x', () => Promise.reject(bug)),
      (err) => err === bug,
    );
    const failure = await failureOf(callAdminApi('getExport', (signal) => client.getExport('exp_missing', { signal })));
    assert.equal(failure.type, 'NotFound');
  });
});
