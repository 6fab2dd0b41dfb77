// Every workflow the worker registers. Workflow code is bundled for Temporal's deterministic sandbox.
export * from './static-export';
export * from './bundle-keeper';
export * from './agent-job';
export * from './rate-limiter';
