// Public entry of the polling policies (docs/contract.md: exportPollDelay and agentPollDelay are imported from
// here by other services' code); they live with the other pure policies in src/policies/polling.ts.
export * from '../policies/polling';
