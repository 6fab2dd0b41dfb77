// The naive implementation of the same jobs, for the capacity benchmark (bench/capacity.ts): the shape
// most first Temporal versions of a polling job take. The workflow sleeps a fixed 10 s between
// activity calls, each call a regular activity with the default retry policy (retried every second,
// doubling up to 100 s); no polling policy, no local activities, no limiter, no search attributes.
//   agent:  createAgentJob, then every 10 s getAgentJob until terminal;
//   export: startExport, then every 10 s getExport until terminal, then generateBundle;
//   keeper: every 10 s one check (is a publish pending, is the link near expiry?), acting when needed.
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { NaiveActivities } from './naive-activities';

export const NAIVE_POLL_MS = 10_000;

const api = proxyActivities<NaiveActivities>({ startToCloseTimeout: '1 minute' });

const AGENT_DONE = ['completed', 'failed', 'archived'];
const EXPORT_DONE = ['completed', 'failed'];

export async function naiveAgent(input: { projectId: string; prompt: string }): Promise<number> {
  const job = await api.createAgentJob(input.projectId, input.prompt);
  let status = job.status;
  let polls = 0;
  while (!AGENT_DONE.includes(status)) {
    await sleep(NAIVE_POLL_MS);
    status = (await api.getAgentJob(input.projectId, job.id)).status;
    polls++;
  }
  return polls;
}

export async function naiveExport(input: { domain: string }): Promise<number> {
  const job = await api.startExport(input.domain);
  let status = job.status;
  let polls = 0;
  while (!EXPORT_DONE.includes(status)) {
    await sleep(NAIVE_POLL_MS);
    status = (await api.getExport(job.jobId)).status;
    polls++;
  }
  if (status === 'completed') await api.generateBundle(job.jobId);
  return polls;
}

/** `ticks` checks 10 s apart (the benchmark runs a few and multiplies: a day is 8,640). */
export async function naiveKeeper(input: { jobId: string; ticks: number }): Promise<number> {
  for (let i = 0; i < input.ticks; i++) {
    await api.getExport(input.jobId);
    await sleep(NAIVE_POLL_MS);
  }
  return input.ticks;
}
