// The task queues a Worker of this process serves, by namespace and build id. The SDK allows one Worker
// per task queue and build id on a connection (versions side by side are fine), and a Worker.create it
// refuses leaves that Worker's workflow threads running (SDK 1.24), which keeps the process alive after
// the error: so the worker asks here before creating one. The jobs' queue is claimed for the whole
// process (one fleet per queue per process); the limiter queues per connection, as the SDK counts them
// (fleets embedded in one process on connections of their own each serve the shared limiter queue).
const servedInProcess = new Set<string>();
const servedOnConnection = new WeakMap<object, Set<string>>();

/** The build id key of an unversioned Worker (the SDK registers those without one). */
export const UNVERSIONED = '';

/**
 * Claims `taskQueue` of `namespace` for `buildId` in this process, or on the connection `scope` when
 * given: the release function, or undefined when it is taken.
 */
export function claimTaskQueue(
  namespace: string,
  taskQueue: string,
  buildId: string,
  scope?: object,
): (() => Promise<void>) | undefined {
  let served = servedInProcess;
  if (scope) {
    served = servedOnConnection.get(scope) ?? new Set<string>();
    servedOnConnection.set(scope, served);
  }
  const key = JSON.stringify([namespace, taskQueue, buildId]);
  if (served.has(key)) return undefined;
  served.add(key);
  return async () => void served.delete(key);
}
