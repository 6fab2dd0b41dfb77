// Workflow type names: the exported function names in src/workflows, and the names other services start
// them by (docs/contract.md). Each workflow's own names are in its contract module beside this one.

export const WorkflowType = {
  staticExport: 'staticExport',
  bundleKeeper: 'bundleKeeper',
  agentJob: 'agentJob',
  agentRateLimiter: 'agentRateLimiter',
} as const;
