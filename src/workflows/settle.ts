// Waiting for a workflow's outgoing messages before its run ends. Deterministic: promises only.

/**
 * Resolves once `inFlight` is empty and `handlersDone()` holds, both at once: a handler that runs
 * while the earlier messages are awaited may send more (they join `inFlight`), and those are awaited
 * too. `waitForHandlers` resolves when `handlersDone()` holds (the workflow's `condition`).
 */
export async function settleAll(
  inFlight: ReadonlySet<Promise<unknown>>,
  handlersDone: () => boolean,
  waitForHandlers: () => Promise<unknown>,
): Promise<void> {
  while (inFlight.size > 0 || !handlersDone()) {
    await Promise.all([...inFlight]);
    await waitForHandlers();
  }
}
