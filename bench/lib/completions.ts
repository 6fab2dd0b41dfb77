// When each of a burst's workflows completed: what the drain benchmarks measure their tail with.

/** Ms from `startedAt` to each handle's result, in the handles' order (NaN for a failure), and the failures. */
export async function completionTimes(
  handles: readonly { workflowId: string; result(): Promise<unknown> }[],
  startedAt: number,
  onFailure: (workflowId: string, err: unknown) => void = () => undefined,
): Promise<{ doneMs: number[]; failed: number }> {
  let failed = 0;
  const doneMs = await Promise.all(
    handles.map((h) =>
      h.result().then(
        () => Date.now() - startedAt,
        (err: unknown) => {
          failed += 1;
          onFailure(h.workflowId, err);
          return Number.NaN;
        },
      ),
    ),
  );
  return { doneMs, failed };
}
