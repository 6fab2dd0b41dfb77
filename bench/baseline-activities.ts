// Activities of the throughput benchmark's baseline worker (bench/throughput.ts --baseline-worker): the
// admin API calls the real lifecycles make, answered from an in-memory simulation of the emulator's jobs
// (the emulator's own job views, emulator/state.ts) instead of HTTP. Same names, inputs and results
// as the real activities, so payloads are the same size; nothing else (no validation, metrics, logging,
// limiter reports): the baseline measures the bare job shape.
import { randomUUID } from 'node:crypto';
import type { AgentJob, Bundle, StaticExportJob } from '../src/api/types';
import { agentJobView, exportView, type AgentJobRecord, type ExportRecord } from '../emulator';
import type { StaticExportInput } from '../src/shared/static-export';

/** Simulated job durations: the emulator's options of the same benchmark run. */
export interface BaselineSimulation {
  agentActiveMs: number;
  exportQueuedMs: number;
  exportDurationMs: number;
  exportTotalPages: number;
}

/** BASELINE_AGENT_ACTIVE_MS, BASELINE_EXPORT_QUEUED_MS, BASELINE_EXPORT_DURATION_MS, BASELINE_EXPORT_TOTAL_PAGES. */
export function simulationFromEnv(env: NodeJS.ProcessEnv): BaselineSimulation {
  const num = (name: string, fallback: number): number => {
    const value = Number(env[name]);
    return env[name] !== undefined && Number.isFinite(value) && value >= 0 ? value : fallback;
  };
  return {
    agentActiveMs: num('BASELINE_AGENT_ACTIVE_MS', 2_000),
    exportQueuedMs: num('BASELINE_EXPORT_QUEUED_MS', 0),
    exportDurationMs: num('BASELINE_EXPORT_DURATION_MS', 3_000),
    exportTotalPages: num('BASELINE_EXPORT_TOTAL_PAGES', 24),
  };
}

export function simulationEnv(sim: BaselineSimulation): Record<string, string> {
  return {
    BASELINE_AGENT_ACTIVE_MS: String(sim.agentActiveMs),
    BASELINE_EXPORT_QUEUED_MS: String(sim.exportQueuedMs),
    BASELINE_EXPORT_DURATION_MS: String(sim.exportDurationMs),
    BASELINE_EXPORT_TOTAL_PAGES: String(sim.exportTotalPages),
  };
}

export function createBaselineActivities(sim: BaselineSimulation, now: () => number = Date.now) {
  const exports = new Map<string, ExportRecord>();
  const agents = new Map<string, AgentJobRecord>();
  const exportRecord = (jobId: string): ExportRecord => {
    const job = exports.get(jobId);
    if (!job) throw new Error(`baseline: no export ${jobId}`);
    return job;
  };

  return {
    async startExport(input: StaticExportInput): Promise<StaticExportJob> {
      const job: ExportRecord = {
        jobId: randomUUID(),
        domain: input.domain,
        version: input.version ?? 'latest',
        paths: input.paths && input.paths.length > 0 ? input.paths : null,
        createdAtMs: now(),
        queuedMs: sim.exportQueuedMs,
        durationMs: sim.exportDurationMs,
        published: null,
        totalPages: sim.exportTotalPages,
        shape: 'linear',
        failure: null,
        maxProgress: 0,
        archive: null,
      };
      exports.set(job.jobId, job);
      return exportView(job, now());
    },

    async getExportStatus(jobId: string): Promise<StaticExportJob> {
      return exportView(exportRecord(jobId), now());
    },

    async generateBundle(jobId: string): Promise<Bundle> {
      const job = exportRecord(jobId);
      exports.delete(jobId);
      return {
        jobId,
        bundleUrl: `https://bundles.example.com/${jobId}.tar.gz?X-Signature=baseline`,
        sizeBytes: 1_024 * job.totalPages,
        expiresAt: new Date(now() + 3_600_000).toISOString(),
      };
    },

    async createAgentJob({ projectId, prompt }: { projectId: string; prompt: string }): Promise<AgentJob> {
      const createdAtMs = now();
      const job: AgentJobRecord = {
        id: randomUUID(),
        projectId,
        prompt,
        messages: [],
        createdAtMs,
        activeUntilMs: createdAtMs + sim.agentActiveMs,
        outcome: 'pr',
        repository: `acme/${projectId}-docs`,
        model: 'baseline',
        prNumber: 1,
      };
      agents.set(job.id, job);
      return agentJobView(job, now());
    },

    async getAgentJob({ jobId }: { projectId: string; jobId: string }): Promise<AgentJob> {
      const job = agents.get(jobId);
      if (!job) throw new Error(`baseline: no agent job ${jobId}`);
      const view = agentJobView(job, now());
      if (view.status !== 'active') agents.delete(jobId);
      return view;
    },
  };
}

export type BaselineActivities = ReturnType<typeof createBaselineActivities>;
