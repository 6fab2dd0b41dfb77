// Defaults the worker, the starter, the client library and the CLI share when the environment says nothing.

export const DEFAULT_TASK_QUEUE = 'docs-admin';
export const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233';
export const DEFAULT_NAMESPACE = 'default';
