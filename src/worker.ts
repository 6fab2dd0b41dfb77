// `npm run worker` (and the worker API the demo, tests and benchmarks import): the code is in src/worker/.
import { main } from './worker/process';

export { MetricsListenError, WorkerStartError } from './worker/errors';
export * from './worker/process';
export * from './worker/worker';
export { WORKFLOW_INTERCEPTOR_MODULES, workflowTracingSinks } from './worker/tracing';
export { createLogger, type LoggerOptions } from './observability/logger';
export { installRuntime, type InstallRuntimeOptions, type InstalledRuntime } from './observability/runtime';

if (require.main === module) main();
