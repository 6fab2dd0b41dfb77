// test-lane: parallel
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { defineUpdate } from '@temporalio/workflow';
import { loadDataConverter } from '@temporalio/common/lib/internal-non-workflow';
import type { temporal } from '@temporalio/proto';
import {
  UpdateNotTakenError,
  isUpdateAbortedByClose,
  isWorkflowClosedAnswer,
  updateCurrentRun,
  updateOutcomeIn,
} from '../../src/client/update';

// The server's answer to an update whose run continued as new before accepting it.
const aborted = () => new WorkflowNotFoundError('workflow update was aborted by closing workflow', 'wf-1', undefined);
const gone = () => new WorkflowNotFoundError('workflow execution already completed', 'wf-1', undefined);
const ping = defineUpdate<string, [string]>('ping');
type Event = temporal.api.history.v1.IHistoryEvent;

interface FakeRun {
  events: Event[];
}

/**
 * A client whose handles answer executeUpdate with `send` (given the update id chosen), and whose
 * histories are `runs` by run id (the latest under undefined).
 */
function fakeClient(send: (updateId: string) => Promise<unknown>, runs: Record<string, FakeRun> = {}) {
  const sent: string[] = [];
  const client = {
    options: { loadedDataConverter: loadDataConverter({}), namespace: 'default' },
    workflow: {
      getHandle: (_id: string, runId?: string) => ({
        executeUpdate: (_def: unknown, options: { updateId: string }) => {
          sent.push(options.updateId);
          return send(options.updateId);
        },
        fetchHistory: async () => ({ events: (runs[runId ?? 'latest'] ?? { events: [] }).events }),
        describe: async () => ({ status: { name: 'COMPLETED' } }),
      }),
    },
  } as unknown as Client;
  return { client, sent };
}

const accepted = (updateId: string): Event => ({
  workflowExecutionUpdateAcceptedEventAttributes: { acceptedRequest: { meta: { updateId } } },
});
const completed = (updateId: string, outcome: temporal.api.update.v1.IOutcome): Event => ({
  workflowExecutionUpdateCompletedEventAttributes: { meta: { updateId }, outcome },
});
const success = (value: unknown) => ({ success: { payloads: [defaultPayloadConverter.toPayload(value)] } });

test('an update aborted by a continue-as-new is sent again, with the same update id, to the run that follows', async () => {
  let calls = 0;
  const { client, sent } = fakeClient(async () => {
    if (++calls < 3) throw aborted();
    return 'accepted';
  });
  assert.equal(await updateCurrentRun(client, 'wf-1', ping, 'x'), 'accepted');
  assert.equal(calls, 3);
  assert.equal(new Set(sent).size, 1);
});

test('any other error is not retried', async () => {
  const error = new Error('boom');
  const { client, sent } = fakeClient(async () => {
    throw error;
  });
  await assert.rejects(updateCurrentRun(client, 'wf-1', ping, 'x'), error);
  assert.equal(sent.length, 1);
  assert.equal(isUpdateAbortedByClose(gone()), false);
  assert.equal(isUpdateAbortedByClose(aborted()), true);
  assert.equal(isWorkflowClosedAnswer(gone()), true);
  assert.equal(isWorkflowClosedAnswer(aborted()), false);
});

test('retries are bounded: a run that keeps closing gives the error back', async () => {
  const { client, sent } = fakeClient(async () => {
    throw aborted();
  });
  await assert.rejects(updateCurrentRun(client, 'wf-1', ping, 'x'), /aborted by closing workflow/);
  assert.equal(sent.length, 5);
});

test('"already completed" after the update took effect: its result comes from the history', async () => {
  const runs: Record<string, FakeRun> = { latest: { events: [] } };
  const { client } = fakeClient(async (updateId) => {
    runs.latest!.events = [{}, accepted(updateId), completed(updateId, success('pong'))];
    throw gone();
  }, runs);
  assert.equal(await updateCurrentRun(client, 'wf-1', ping, 'x'), 'pong');
});

test('"already completed" after the update failed: its failure comes from the history', async () => {
  const runs: Record<string, FakeRun> = { latest: { events: [] } };
  const { client } = fakeClient(async (updateId) => {
    runs.latest!.events = [
      accepted(updateId),
      completed(updateId, { failure: { message: 'no agent job', applicationFailureInfo: { type: 'NotFound' } } }),
    ];
    throw gone();
  }, runs);
  await assert.rejects(updateCurrentRun(client, 'wf-1', ping, 'x'), (err: unknown) => {
    assert.ok(err instanceof WorkflowUpdateFailedError);
    assert.match(String((err.cause as Error).message), /no agent job/);
    return true;
  });
});

test('an update found in the run before a continue-as-new counts too', async () => {
  const runs: Record<string, FakeRun> = {
    latest: { events: [{ workflowExecutionStartedEventAttributes: { continuedExecutionRunId: 'run-1' } }] },
    'run-1': { events: [] },
  };
  const { client } = fakeClient(async (updateId) => {
    runs['run-1']!.events = [completed(updateId, success('earlier'))];
    throw gone();
  }, runs);
  assert.equal(await updateCurrentRun(client, 'wf-1', ping, 'x'), 'earlier');
});

test('"already completed" with no trace of the update: it did not take effect, and says so', async () => {
  const { client } = fakeClient(async () => {
    throw gone();
  });
  await assert.rejects(updateCurrentRun(client, 'wf-1', ping, 'x'), (err: unknown) => {
    assert.ok(err instanceof UpdateNotTakenError);
    assert.equal(err.message, 'ping did not take effect: wf-1 had already closed (COMPLETED) before it arrived');
    return true;
  });
});

test('updateOutcomeIn: accepted only, completed, or nothing, by update id', () => {
  assert.equal(updateOutcomeIn([accepted('other')], 'u1'), undefined);
  assert.deepEqual(updateOutcomeIn([accepted('u1')], 'u1'), { kind: 'accepted' });
  assert.equal(updateOutcomeIn([accepted('u1'), completed('u1', success(1))], 'u1')?.kind, 'completed');
});
