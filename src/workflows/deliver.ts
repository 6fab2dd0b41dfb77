// Waiting for a workflow's outgoing messages before its run ends. Deterministic: promises only.
import { condition } from '@temporalio/workflow';

/**
 * Resolves once `inFlight` is empty and `handlersDone()` holds, both at once: a handler that runs
 * while the earlier messages are awaited may send more (they join `inFlight`), and those are awaited
 * too. `waitForHandlers` resolves when `handlersDone()` holds (the workflow's `condition`; unit tests
 * pass their own, outside a workflow).
 */
export async function deliverAll(
  inFlight: ReadonlySet<Promise<unknown>>,
  handlersDone: () => boolean,
  waitForHandlers: () => Promise<unknown> = () => condition(handlersDone),
): Promise<void> {
  while (inFlight.size > 0 || !handlersDone()) {
    await Promise.all([...inFlight]);
    await waitForHandlers();
  }
}
