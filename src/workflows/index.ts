// Every workflow the worker registers. Workflow code is bundled for Temporal's deterministic sandbox.
export * from './static-export';
export * from './bundle-keeper';
export * from './agent-job';
export * from './rate-limiter';
// Each type's Worker Deployment Versioning behaviour (PINNED or AUTO_UPGRADE), set on the functions above.
import './versioning';
