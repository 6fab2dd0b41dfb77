// Defaults the worker, the starter, the client library and the CLI share when the environment says nothing.

export const DEFAULT_TASK_QUEUE = 'docs-admin';
export const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233';
export const DEFAULT_NAMESPACE = 'default';
/** How long a stopping worker lets running activities finish (SHUTDOWN_GRACE_TIME). */
export const DEFAULT_SHUTDOWN_GRACE_TIME_MS = 30_000;
