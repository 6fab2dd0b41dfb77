// Typed client library: what other services (and the CLI) import to start, await, query and signal
// the docs-admin workflows. Inputs are validated with src/policies/validation before anything is
// started; starts carry a one-line summary, details and the Docs* search attributes for the Web UI;
// callers pass a requestId to make a start idempotent (same id -> the same workflow, never a second one).
export {
  connectClient,
  temporalConnectionOptions,
  splitAddress,
  unreachableMessage,
  TemporalUnreachableError,
} from '../connection';
export type { ConnectClientOptions } from '../connection';
export { failureReason } from '../shared/failures';
export * from './agent';
export * from './errors';
export * from './export';
export * from './keeper';
export type {
  AgentJobWorkflow,
  BundleKeeperWorkflow,
  ProgressOptions,
  StartOptions,
  StaticExportWorkflow,
} from './start';
export * from './parked';
export * from './status';
export { UpdateNotTakenError } from './update';
