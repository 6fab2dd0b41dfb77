// test-lane: parallel
// withSendCheckpoints in an activity context: what is recorded, in which order, around one request.
// The Temporal client is a recorder here: these tests are about the order of the two checkpoints and
// the moment the request's answer is noted (the permit's use time), not about the server.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  ANSWERED_CHECKPOINT_TIMEOUT_MS,
  CHECKPOINT_TIMEOUT_MS,
  CheckpointChannel,
  withCheckpointChannel,
  withSendCheckpoints,
} from '../../src/activities/send-checkpoint';
import { ApiFailure } from '../../src/shared/failures';
import { waitFor } from '../../scripts/wait';

function recorder(steps: string[], failFirstHeartbeat = false, deadlines: number[] = [], at: number[] = []): Client {
  let heartbeats = 0;
  return {
    async withDeadline<R>(deadline: number, fn: () => Promise<R>): Promise<R> {
      deadlines.push(deadline - Date.now());
      return fn();
    },
    activity: {
      async heartbeat(_token: Uint8Array, details?: { phase: string }) {
        heartbeats += 1;
        if (failFirstHeartbeat && heartbeats === 1) throw new Error('server unavailable');
        steps.push(`checkpoint ${details?.phase ?? 'none'}`);
        at.push(Date.now());
      },
    },
  } as unknown as Client;
}

/** One createAgentJob send in an activity context, through a checkpoint channel; noting the answer as a step. */
function checkpointedSend(client: Client, steps: string[], request: () => Promise<{ id: string }>) {
  return new MockActivityEnvironment().run(() =>
    withCheckpointChannel(client, (channel) =>
      withSendCheckpoints(channel, 'createAgentJob', request, () => steps.push('answered')),
    ),
  );
}

test('the answer is noted the moment the request returns, before it is checkpointed', async () => {
  const steps: string[] = [];
  const deadlines: number[] = [];
  const result = await checkpointedSend(recorder(steps, false, deadlines), steps, async () => {
    steps.push('request');
    return { id: 'job-1' };
  });
  assert.deepEqual(result, { id: 'job-1' });
  assert.deepEqual(steps, ['checkpoint sending', 'request', 'answered', 'checkpoint answered']);
  // Each checkpoint's call to Temporal has a deadline: a lost response cannot hold the attempt for its
  // whole timeout; the answer's, best effort, a short one, so an unreachable server cannot hold the
  // completion (which carries the answer too) past the attempt's heartbeat timeout.
  assert.equal(deadlines.length, 2);
  const [sending, answered] = deadlines as [number, number];
  assert.ok(sending > ANSWERED_CHECKPOINT_TIMEOUT_MS && sending <= CHECKPOINT_TIMEOUT_MS, `sending: ${sending} ms`);
  assert.ok(answered > 0 && answered <= ANSWERED_CHECKPOINT_TIMEOUT_MS, `answered: ${answered} ms`);
});

test('a failed request is noted as answered too, and leaves only its sending checkpoint', async () => {
  const steps: string[] = [];
  await assert.rejects(
    checkpointedSend(recorder(steps), steps, async () => {
      steps.push('request');
      throw new Error('socket hang up');
    }),
    /socket hang up/,
  );
  assert.deepEqual(steps, ['checkpoint sending', 'request', 'answered']);
});

test('nothing is sent (and nothing noted) when the sending checkpoint cannot be recorded', async () => {
  const steps: string[] = [];
  await assert.rejects(
    checkpointedSend(recorder(steps, true), steps, async () => {
      steps.push('request');
      return { id: 'job-1' };
    }),
    (err: unknown) =>
      err instanceof ApplicationFailure && err.type === ApiFailure.networkError && err.nonRetryable === false,
  );
  assert.deepEqual(steps, []);
});

test('a long attempt is kept alive with its last checkpoint, in order, and nothing before the first', async () => {
  const steps: string[] = [];
  const at: number[] = [];
  const client = recorder(steps, false, [], at);
  // Each phase lasts until two keep-alives were sent in it (waiting for state: a busy machine delays
  // timers), then moves on.
  const twoMore = async () => {
    const from = steps.length;
    await waitFor(() => steps.length >= from + 2, { intervalMs: 5, what: 'two keep-alives' });
  };
  let closedWith = 0;
  await new MockActivityEnvironment().run(async () => {
    const channel = new CheckpointChannel<{ id: string }>(client, 20);
    try {
      await twoMore(); // waiting for a permit: nothing sent yet
      steps.push('---');
      await withSendCheckpoints(channel, 'createAgentJob', async () => {
        await twoMore();
        steps.push('request');
        return { id: 'job-1' };
      });
      steps.push('===');
      await twoMore();
    } finally {
      channel.close();
      closedWith = steps.length;
    }
    await new Promise((resolve) => setTimeout(resolve, 100)); // five intervals: none may come now
  });
  const [waiting, sending, answered] = [
    steps.slice(0, steps.indexOf('---')),
    steps.slice(steps.indexOf('---') + 1, steps.indexOf('request')),
    steps.slice(steps.indexOf('===') + 1),
  ];
  assert.ok(
    waiting.length >= 2 && waiting.every((step) => step === 'checkpoint none'),
    `keep-alives while waiting: ${waiting.join(', ')}`,
  );
  assert.ok(sending.length >= 2 && sending.every((step) => step === 'checkpoint sending'), sending.join(', '));
  assert.equal(steps[steps.indexOf('request') + 1], 'checkpoint answered');
  // After the answer only the answer is repeated, and nothing once the channel is closed.
  assert.ok(answered.length >= 2 && answered.every((step) => step === 'checkpoint answered'), answered.join(', '));
  assert.equal(steps.length, closedWith, `keep-alives after the close: ${steps.slice(closedWith).join(', ')}`);
  // Keep-alives are paced by the 20 ms interval: over the run, at most one per interval besides the
  // checkpoints sent at once when the phase changes (sending, answered). libuv's timer clock counts whole
  // milliseconds, so an interval can end up to 1 ms early in real time (seen: 8 in 99 ms): 19 ms apart at least.
  const checkpoints = steps.filter((step) => step.startsWith('checkpoint')).length;
  const spanMs = at.at(-1)! - at[0]!;
  assert.ok(checkpoints <= 3 + spanMs / 19, `${checkpoints} keep-alives in ${spanMs} ms at a 20 ms interval`);
});
