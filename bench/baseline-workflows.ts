// Baseline workflows for the end-to-end throughput benchmark (bench/throughput.ts): the same sequence of
// Temporal commands as staticExport and agentJob, with the same activity options, but the activities
// answer from an in-memory simulation (bench/baseline-activities.ts) instead of HTTP to the emulator.
//   export: startExport, then status polls at exportPollDelay timers until the job is terminal, then
//           generateBundle, every call a local activity;
//   agent:  createAgentJob activity, then status polls as local activities at agentPollDelay timers.
// Left out on purpose, being the product's own work and not the job's shape: search attributes, current
// details, activity summaries, the status query, input validation, the per-project rate limiter's
// permits. The real workflows' throughput is reported as a ratio to this one, so the ratio is the cost
// of the product over the bare job shape on this server and machine.
import { ApplicationFailure, proxyActivities, proxyLocalActivities, sleep } from '@temporalio/workflow';
import { AGENT_TERMINAL_STATUSES, EXPORT_TERMINAL_STATUSES } from '../src/api/types';
import { agentPollDelay, exportPollDelay, recentObservations, type Observation } from '../src/policies/polling';
import type { BaselineActivities } from './baseline-activities';

// The real workflows' options (src/workflows/static-export.ts and src/workflows/agent-job.ts).
const API_RETRY = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' } as const;
/** staticExport's calls: startExport, its status polls, generateBundle (all local). */
const exportApi = proxyLocalActivities<BaselineActivities>({ startToCloseTimeout: '1 minute', retry: API_RETRY });
/** agentJob's createAgentJob: one attempt (not idempotent). */
const agentCreate = proxyActivities<BaselineActivities>({ startToCloseTimeout: '60s', retry: { maximumAttempts: 1 } });
/** agentJob's status polls (local). */
const agentPolls = proxyLocalActivities<BaselineActivities>({ startToCloseTimeout: '60s', retry: API_RETRY });

export interface BaselineExportInput {
  domain: string;
}

export interface BaselineAgentInput {
  projectId: string;
  prompt: string;
}

export interface BaselineResult {
  jobId: string;
  /** Status polls (local activities), each after one timer. */
  polls: number;
}

const terminal = (statuses: readonly string[], status: string): boolean => statuses.includes(status);

/** staticExport's shape: start, poll until terminal, bundle. */
export async function baselineExport(input: BaselineExportInput): Promise<BaselineResult> {
  let job = await exportApi.startExport({ domain: input.domain });
  const observe = (): Observation => ({
    atMs: Date.now(),
    status: job.status,
    progress: job.progress,
    pageCount: job.pageCount,
  });
  let observations = [observe()];
  let polls = 0;
  while (!terminal(EXPORT_TERMINAL_STATUSES, job.status)) {
    await sleep(exportPollDelay(observations, Date.now()));
    job = await exportApi.getExportStatus(job.jobId);
    polls += 1;
    observations = recentObservations([...observations, observe()]);
  }
  if (job.status === 'failed') throw ApplicationFailure.nonRetryable(`export ${job.jobId} failed`, 'ExportFailed');
  await exportApi.generateBundle(job.jobId);
  return { jobId: job.jobId, polls };
}

/** agentJob's shape: create, poll until terminal. */
export async function baselineAgent(input: BaselineAgentInput): Promise<BaselineResult> {
  let job = await agentCreate.createAgentJob({ projectId: input.projectId, prompt: input.prompt });
  let observations: Observation[] = [{ atMs: Date.now(), status: job.status }];
  let polls = 0;
  while (!terminal(AGENT_TERMINAL_STATUSES, job.status)) {
    await sleep(agentPollDelay(observations, Date.now()));
    job = await agentPolls.getAgentJob({ projectId: input.projectId, jobId: job.id });
    polls += 1;
    observations = recentObservations([...observations, { atMs: Date.now(), status: job.status }]);
  }
  if (job.status === 'failed') throw ApplicationFailure.nonRetryable(`agent job ${job.id} failed`, 'AgentJobFailed');
  return { jobId: job.id, polls };
}
