// The polling policies compared by the benchmark: fixed intervals, plain exponential backoff, and ours.
import { type Observation, agentPollDelay, exportPollDelay } from '../../src/policies/polling';
import { type Random } from './prng';

export interface SimPolicy {
  name: string;
  /** Whether this is the project's own policy (the one the targets apply to). */
  ours: boolean;
  /** Delay before the next poll, given the observations so far (oldest first) and the time. */
  next: (observations: readonly Observation[], nowMs: number, pollIndex: number, random: Random) => number;
}

export const fixed = (ms: number): SimPolicy => ({ name: `fixed ${ms / 1000} s`, ours: false, next: () => ms });

export const exponential = (startMs: number, capMs: number): SimPolicy => ({
  name: `exp ${startMs / 1000} s -> ${capMs / 1000} s`,
  ours: false,
  next: (_obs, _now, i) => Math.min(capMs, startMs * 2 ** i),
});

export const oursExport: SimPolicy = {
  name: 'ours',
  ours: true,
  next: (obs, now, _i, random) => exportPollDelay(obs, now, { random }),
};

export const oursAgent: SimPolicy = {
  name: 'ours',
  ours: true,
  next: (obs, now, _i, random) => agentPollDelay(obs, now, { random }),
};

export const baselines = (): SimPolicy[] => [fixed(5_000), fixed(10_000), fixed(60_000), exponential(1_000, 60_000)];
