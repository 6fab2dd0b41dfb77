// Updates sent by workflow id reach the run that is current when the server takes them. One that
// arrives while that run continues as new is aborted by the server ("workflow update was aborted by
// closing workflow", a NotFound): it was never accepted, so nothing ran, and the next run takes it.
// An update that completes in the same workflow task as its workflow can be answered "workflow
// execution already completed" although it took effect (server 1.29): its outcome is then read from
// the history, found by the update id this module chooses.
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import {
  decodeFromPayloadsAtIndex,
  decodeOptionalFailureToOptionalError,
} from '@temporalio/common/lib/internal-non-workflow';
import type { temporal } from '@temporalio/proto';

/** Tries after the first: a run continues as new within a workflow task, so one more try nearly always does. */
const RETRIES = 4;
const RETRY_DELAY_MS = 100;
/** Runs searched for an update's outcome, newest first: a continue-as-new right after it adds one. */
const RUNS_SEARCHED = 3;

/** True for the server's abort of an update whose run closed (continued as new) before accepting it. */
export function isUpdateAbortedByClose(err: unknown): boolean {
  return err instanceof WorkflowNotFoundError && /aborted by closing workflow/i.test(err.message);
}

/** The server's answer to an update whose workflow is closed: it may or may not have taken effect. */
export function isWorkflowClosedAnswer(err: unknown): boolean {
  return err instanceof WorkflowNotFoundError && /already completed/i.test(err.message);
}

/** An update sent to a workflow that had closed before accepting it: nothing changed. */
export class UpdateNotTakenError extends Error {
  override readonly name = 'UpdateNotTakenError';
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** What a run's history says of one update: completed (with its outcome), accepted only, or nothing. */
export function updateOutcomeIn(
  events: HistoryEvent[],
  updateId: string,
): { kind: 'completed'; outcome: temporal.api.update.v1.IOutcome } | { kind: 'accepted' } | undefined {
  let accepted = false;
  for (const event of events) {
    const completed = event.workflowExecutionUpdateCompletedEventAttributes;
    if (completed?.meta?.updateId === updateId && completed.outcome)
      return { kind: 'completed', outcome: completed.outcome };
    if (event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.meta?.updateId === updateId)
      accepted = true;
  }
  return accepted ? { kind: 'accepted' } : undefined;
}

/**
 * Sends an update to the workflow's current run and returns its result: again if a continue-as-new
 * raced it, and from the history when the server answers that the workflow closed meanwhile.
 */
export async function updateCurrentRun<Ret, Args extends unknown[]>(
  client: Client,
  workflowId: string,
  update: UpdateDefinition<Ret, Args>,
  ...args: Args
): Promise<Ret> {
  const updateId = randomUUID();
  for (let attempt = 0; ; attempt++) {
    try {
      // By name: the definition's argument tuple may be empty, which executeUpdate's overloads split.
      const options = { args: args as unknown[] as [unknown, ...unknown[]], updateId };
      return await client.workflow.getHandle(workflowId).executeUpdate<Ret, typeof options.args>(update.name, options);
    } catch (err) {
      if (isWorkflowClosedAnswer(err)) return outcomeFromHistory<Ret>(client, workflowId, updateId, update.name);
      if (!isUpdateAbortedByClose(err) || attempt >= RETRIES) throw err;
      await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS * (attempt + 1)));
    }
  }
}

/** The outcome of `updateId`, read from the latest runs' histories of a closed workflow. */
async function outcomeFromHistory<Ret>(
  client: Client,
  workflowId: string,
  updateId: string,
  updateName: string,
): Promise<Ret> {
  let handle: WorkflowHandle = client.workflow.getHandle(workflowId);
  for (let run = 0; run < RUNS_SEARCHED; run++) {
    const events = (await handle.fetchHistory()).events ?? [];
    const found = updateOutcomeIn(events, updateId);
    if (found?.kind === 'completed') return decodeOutcome<Ret>(client, workflowId, found.outcome);
    if (found?.kind === 'accepted')
      throw new Error(`${updateName} was accepted by ${workflowId}, which closed before finishing it`);
    const previousRunId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    if (!previousRunId) break;
    handle = client.workflow.getHandle(workflowId, previousRunId);
  }
  const { status } = await client.workflow.getHandle(workflowId).describe();
  throw new UpdateNotTakenError(
    `${updateName} did not take effect: ${workflowId} had already closed (${status.name}) before it arrived`,
  );
}

async function decodeOutcome<Ret>(
  client: Client,
  workflowId: string,
  outcome: temporal.api.update.v1.IOutcome,
): Promise<Ret> {
  const converter = client.options.loadedDataConverter;
  const context = { type: 'workflow' as const, namespace: client.options.namespace, workflowId };
  if (outcome.failure)
    throw new WorkflowUpdateFailedError(
      'Workflow Update failed',
      await decodeOptionalFailureToOptionalError(converter, outcome.failure, context),
    );
  return decodeFromPayloadsAtIndex<Ret>(converter, 0, outcome.success?.payloads, context);
}
