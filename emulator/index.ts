// In-process admin API emulator for tests, the demo and the benchmark:
//   const emu = await startEmulator({ agentActiveMs: 200 }); ... emu.url ... await emu.close();
import {
  Emulator,
  type EmulatedAgentJob,
  type EmulatedExport,
  type EmulatedUpdate,
  type EmulatorCounters,
} from './server';
import type { PushRequest } from './publishing';
import type { FaultRule } from './faults';
import type { EmulatorOptions } from './options';

export type { EmulatorOptions, EmulatorAnswer, AgentOutcome, ProgressShape, RetryAfterForm } from './options';
export { DEFAULT_OPTIONS, defaultAgentOutcome, defaultExportFailure } from './options';
export type { FaultRule, FaultKind, EmulatorRoute } from './faults';
export type { EmulatorCounters, EmulatedAgentJob, EmulatedExport, EmulatedUpdate } from './server';
export type { PushRequest } from './publishing';
export { Emulator } from './server';
// The emulator's own job views (the benchmark's no-HTTP baseline) and its seeded PRNG (the simulations).
export { agentJobView, exportView, type AgentJobRecord, type ExportRecord } from './state';
export { seededRandom, type Random } from './seeded-random';
// The answers as the platform documents them, which the emulator's every answer keeps to (the contract tests).
export {
  DOCUMENTED_OPERATIONS,
  documentedAgentJob,
  documentedDeploymentUpdate,
  undocumentedAnswer,
} from './documented';

export interface EmulatorHandle {
  /** Base URL, e.g. http://127.0.0.1:41234 (no trailing slash). Use it as ADMIN_API_URL. */
  url: string;
  port: number;
  close(): Promise<void>;
  counters(): EmulatorCounters;
  /** Agent jobs with projectId and prompt (count them per prompt to prove no duplicates). */
  jobs(): EmulatedAgentJob[];
  /** Export jobs with their domain and when they finish. */
  exports(): EmulatedExport[];
  /** Moves a project's branch head (a push on GitHub); `domain` maps the domain's exports to the project. */
  push(request: PushRequest): { sha: string };
  /** Deployment updates with their current view. */
  updates(): EmulatedUpdate[];
  /** Replaces the fault rules; a seed restarts the fault RNG. */
  setFaults(rules: FaultRule[], seed?: number): void;
  /** Changes options for what happens next (durations apply to jobs created afterwards). */
  configure(options: Partial<EmulatorOptions>): void;
  /** Forgets all jobs, rate windows, counters and faults. */
  reset(): void;
  /** Makes a key valid (with validKeys set, only those are); revokeKey makes one answer 401. */
  addKey(key: string): void;
  revokeKey(key: string): void;
  /** How many calls a key was accepted for. */
  acceptedCalls(key: string): number;
  emulator: Emulator;
}

/** Starts an emulator on 127.0.0.1 and a free port (unless options say otherwise). */
export async function startEmulator(options: Partial<EmulatorOptions> = {}): Promise<EmulatorHandle> {
  const emulator = new Emulator({ host: '127.0.0.1', port: 0, ...options });
  await emulator.listen();
  const port = Number(new URL(emulator.url).port);
  return {
    url: emulator.url,
    port,
    close: () => emulator.close(),
    counters: () => emulator.counters(),
    jobs: () => emulator.jobs(),
    exports: () => emulator.exports(),
    push: (request) => emulator.push(request),
    updates: () => emulator.updates(),
    setFaults: (rules, seed) => emulator.setFaults(rules, seed),
    configure: (o) => emulator.configure(o),
    reset: () => emulator.reset(),
    addKey: (key) => emulator.addKey(key),
    revokeKey: (key) => emulator.revokeKey(key),
    acceptedCalls: (key) => emulator.acceptedCalls(key),
    emulator,
  };
}
