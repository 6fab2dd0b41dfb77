// The polling benchmark's report (bench/polling-sim.ts makes it, ./report.ts renders it).

export interface PolicyResult {
  name: string;
  ours: boolean;
  callsMean: number;
  callsP99: number;
  lagP50Ms: number;
  lagP99Ms: number;
  lagMeanMs: number;
  /** Lag p99 over the jobs that waited in the queue first (what the queued branch of a policy decides). */
  queuedLagP99Ms: number;
  /** Lag percentiles over the runs of 1 h or more on their own (null when the scenario has none). */
  longLagP50Ms: number | null;
  longLagP99Ms: number | null;
}

export interface TargetResult {
  description: string;
  value: number;
  limit: number;
  pass: boolean;
}

export interface ScenarioResult {
  name: string;
  description: string;
  /** The jobs every policy of the scenario ran against (the same ones for all). */
  jobs: { count: number; queued: number; queuedMinMs: number; queuedMaxMs: number; long: number };
  policies: PolicyResult[];
  targets: TargetResult[];
  pass: boolean;
}

export interface PollingReport {
  benchmark: 'polling';
  jobs: number;
  seed: number;
  scenarios: ScenarioResult[];
  pass: boolean;
}
