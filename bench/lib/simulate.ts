// Runs one policy against one simulated job: poll until the job reports completion.
import { type Observation, recentObservations } from '../../src/policies/polling';
import { type SimJob, completionMs, statusAt } from './jobs';
import { type SimPolicy } from './policies';
import { type Random } from './prng';

export interface JobRun {
  /** Status GETs after the start/create call. */
  calls: number;
  /** From completion to the poll that saw it (ms). */
  lagMs: number;
}

const MAX_POLLS = 100_000;

export function simulateJob(job: SimJob, policy: SimPolicy, withProgress: boolean, random: Random): JobRun {
  // The first observation is the start/create response at t = 0. Like the workflows, keep only the
  // most recent observations (bounded history across continue-as-new).
  let history: Observation[] = [{ atMs: 0, ...statusAt(job, 0, withProgress) }];
  const doneAt = completionMs(job);
  let now = 0;
  for (let calls = 1; calls <= MAX_POLLS; calls++) {
    const delay = policy.next(history, now, calls - 1, random);
    if (!(delay > 0)) throw new Error(`${policy.name} returned a non-positive delay ${delay}`);
    now += delay;
    const seen = statusAt(job, now, withProgress);
    if (seen.status === 'completed') return { calls, lagMs: now - doneAt };
    history = recentObservations([...history, { atMs: now, ...seen }]);
  }
  throw new Error(`${policy.name} did not finish within ${MAX_POLLS} polls`);
}
