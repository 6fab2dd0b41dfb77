// Updates sent by workflow id reach the run that is current when the server takes them. One that
// arrives while that run continues as new is aborted by the server ("workflow update was aborted by
// closing workflow", a NotFound): it was never accepted, so nothing ran, and the next run takes it.
import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';

/** Tries after the first: a run continues as new within a workflow task, so one more try nearly always does. */
const RETRIES = 4;
const RETRY_DELAY_MS = 100;

/** True for the server's abort of an update whose run closed (continued as new) before accepting it. */
export function isUpdateAbortedByClose(err: unknown): boolean {
  return err instanceof WorkflowNotFoundError && /aborted by closing workflow/i.test(err.message);
}

/** Sends an update (`send`) to the workflow's current run, again if a continue-as-new raced it. */
export async function updateCurrentRun<Ret>(
  client: Client,
  workflowId: string,
  send: (handle: WorkflowHandle) => Promise<Ret>,
): Promise<Ret> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await send(client.workflow.getHandle(workflowId));
    } catch (err) {
      if (!isUpdateAbortedByClose(err) || attempt >= RETRIES) throw err;
      await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS * (attempt + 1)));
    }
  }
}
