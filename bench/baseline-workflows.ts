// Baseline workflows for the end-to-end throughput benchmark (bench/throughput.ts): the same shape as
// agentJob and staticExport (start, then wait by the same polling policy until the job is done) but
// with no activity and no HTTP. The "job" is simulated from workflow time, so the only work is
// timers and workflow tasks: the figure tells what this server and this machine can do, and the real
// workflows' throughput is reported as a ratio to it.
import { sleep } from '@temporalio/workflow';
import { agentPollDelay, exportPollDelay, recentObservations, type Observation } from '../src/workflows/polling';

export interface BaselineAgentInput {
  /** How long the simulated agent job stays active (the emulator's agentActiveMs). */
  activeMs: number;
}

export interface BaselineExportInput {
  /** Time queued before running (the emulator's exportQueuedMs). */
  queuedMs: number;
  /** Running time, linear progress (the emulator's exportDurationMs). */
  durationMs: number;
}

export interface BaselineResult {
  /** Timer waits, as many as the real workflow's status polls. */
  polls: number;
}

/** agentJob without HTTP: agentPollDelay timers until the simulated job is no longer active. */
export async function baselineAgent(input: BaselineAgentInput): Promise<BaselineResult> {
  const startedAt = Date.now();
  let observations: Observation[] = [{ atMs: startedAt, status: 'active' }];
  let polls = 0;
  for (;;) {
    await sleep(agentPollDelay(observations, Date.now()));
    polls += 1;
    const now = Date.now();
    const status = now - startedAt >= input.activeMs ? 'completed' : 'active';
    if (status === 'completed') return { polls };
    observations = recentObservations([...observations, { atMs: now, status }]);
  }
}

/** staticExport without HTTP: exportPollDelay timers until the simulated export completes. */
export async function baselineExport(input: BaselineExportInput): Promise<BaselineResult> {
  const startedAt = Date.now();
  const view = (now: number): Observation => {
    const elapsed = now - startedAt;
    if (elapsed < input.queuedMs) return { atMs: now, status: 'queued', progress: 0 };
    const progress = Math.min(100, Math.floor(((elapsed - input.queuedMs) / Math.max(1, input.durationMs)) * 100));
    return { atMs: now, status: progress >= 100 ? 'completed' : 'running', progress };
  };
  let observations: Observation[] = [view(startedAt)];
  let polls = 0;
  for (;;) {
    await sleep(exportPollDelay(observations, Date.now()));
    polls += 1;
    const observation = view(Date.now());
    if (observation.status === 'completed') return { polls };
    observations = recentObservations([...observations, observation]);
  }
}
