// Shapes of the admin API (docs/contract.md) as the rest of the code sees them, after validation: the
// answers' types are what their schemas (./schemas.ts) output.
import type { z } from 'zod';
import type { bundleSchema, deploymentUpdateSchema, staticExportJobSchema, updateTriggerSchema } from './schemas';

/** Known agent job statuses; the API may send others, which count as not yet terminal. */
export const AGENT_TERMINAL_STATUSES = ['completed', 'archived', 'failed'] as const;
export type AgentJobStatus = 'active' | (typeof AGENT_TERMINAL_STATUSES)[number];

/** Defined beside agentJob's contract, which carries it (src/shared/agent-job-record.ts). */
import type { AgentJob } from '../shared/agent-job-record';
export type { AgentJob };

export const EXPORT_TERMINAL_STATUSES = ['completed', 'failed'] as const;
export type ExportJobStatus = 'queued' | 'running' | (typeof EXPORT_TERMINAL_STATUSES)[number];

export type StaticExportJob = z.output<typeof staticExportJobSchema>;
export type Bundle = z.output<typeof bundleSchema>;

export interface StartExportRequest {
  domain: string;
  version?: string;
  paths?: string[];
}

export const UPDATE_TERMINAL_STATUSES = ['success', 'failure'] as const;
export type DeploymentUpdateStatus = 'queued' | 'in_progress' | (typeof UPDATE_TERMINAL_STATUSES)[number];

export type UpdateTrigger = z.output<typeof updateTriggerSchema>;
export type DeploymentUpdate = z.output<typeof deploymentUpdateSchema>;

export interface CallOptions {
  /** Aborts the HTTP call (wired to activity cancellation). */
  signal?: AbortSignal;
}

/** The eight operations of the admin API. Implemented over HTTP by AdminApiClient. */
export interface AdminApi {
  createAgentJob(projectId: string, prompt: string, options?: CallOptions): Promise<AgentJob>;
  getAgentJob(projectId: string, jobId: string, options?: CallOptions): Promise<AgentJob>;
  sendAgentMessage(projectId: string, jobId: string, prompt: string, options?: CallOptions): Promise<AgentJob>;
  startExport(request: StartExportRequest, options?: CallOptions): Promise<StaticExportJob>;
  getExport(jobId: string, options?: CallOptions): Promise<StaticExportJob>;
  generateBundle(jobId: string, options?: CallOptions): Promise<Bundle>;
  triggerUpdate(projectId: string, options?: CallOptions): Promise<UpdateTrigger>;
  getUpdateStatus(statusId: string, options?: CallOptions): Promise<DeploymentUpdate>;
}

export type AdminApiOperation = keyof AdminApi;
