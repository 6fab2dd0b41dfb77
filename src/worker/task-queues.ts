// The task queues a Worker of this process serves, by namespace and build id. The SDK allows one Worker
// per task queue and build id in a process (versions side by side are fine), and a Worker.create it
// refuses leaves that Worker's workflow threads running (SDK 1.24), which keeps the process alive after
// the error: so the worker asks here before creating one.
const servedInProcess = new Set<string>();

/** Claims `taskQueue` of `namespace` for `buildId` in this process: the release function, or undefined when it is taken. */
export function claimTaskQueue(
  namespace: string,
  taskQueue: string,
  buildId: string,
): (() => Promise<void>) | undefined {
  const key = JSON.stringify([namespace, taskQueue, buildId]);
  if (servedInProcess.has(key)) return undefined;
  servedInProcess.add(key);
  return async () => void servedInProcess.delete(key);
}
