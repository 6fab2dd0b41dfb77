// "Version 2" of the workflows, for the rollout test: src/workflows with two changes.
// - agentJob (PINNED) changes incompatibly: it waits a moment before anything else, so a v1 execution
//   replayed on it would fail with a nondeterminism error. Pinning keeps v1 executions on v1.
// - bundleKeeper (AUTO_UPGRADE) changes compatibly, behind patched(): new runs record a marker and wait
//   a moment first; running executions replay the old path on v2.
import { patched, sleep } from '@temporalio/workflow';
import type { AgentJobInput, AgentJobOptions, AgentJobResult } from '../../../src/shared/agent-job';
import type { BundleKeeperInput } from '../../../src/shared/bundle-keeper';
import { agentJob as agentJobV1 } from '../../../src/workflows/agent-job';
import { bundleKeeper as bundleKeeperV1 } from '../../../src/workflows/bundle-keeper';
import { declareVersioningBehaviour } from '../../../src/workflows/versioning';

export * from '../../../src/workflows';

export async function agentJob(input: AgentJobInput, options?: AgentJobOptions): Promise<AgentJobResult> {
  await sleep(1);
  return agentJobV1(input, options);
}

export async function bundleKeeper(input: BundleKeeperInput): Promise<void> {
  if (patched('rollout-v2-keeper-pause')) await sleep(1);
  return bundleKeeperV1(input);
}

declareVersioningBehaviour('agentJob', agentJob);
declareVersioningBehaviour('bundleKeeper', bundleKeeper);
