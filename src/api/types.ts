// Shapes of the admin API (docs/contract.md) as the rest of the code sees them, after validation.

/** Known agent job statuses; the API may send others, which count as not yet terminal. */
export const AGENT_TERMINAL_STATUSES = ['completed', 'archived', 'failed'] as const;
export type AgentJobStatus = 'active' | (typeof AGENT_TERMINAL_STATUSES)[number];

/** Defined beside agentJob's contract, which carries it (src/shared/agent-job-record.ts). */
import type { AgentJob } from '../shared/agent-job-record';
export type { AgentJob };

export const EXPORT_TERMINAL_STATUSES = ['completed', 'failed'] as const;
export type ExportJobStatus = 'queued' | 'running' | (typeof EXPORT_TERMINAL_STATUSES)[number];

export interface StaticExportJob {
  jobId: string;
  /** One of ExportJobStatus, or an unknown value passed through as is. */
  status: string;
  /** 0..100 */
  progress: number;
  pageCount: number;
  createdAt: string;
  updatedAt: string;
  /** Present only when status is failed. */
  error?: string;
}

export interface Bundle {
  jobId: string;
  bundleUrl: string;
  sizeBytes: number;
  /** ISO-8601 instant after which bundleUrl stops working. */
  expiresAt: string;
}

export interface StartExportRequest {
  domain: string;
  version?: string;
  paths?: string[];
}

/** A deployment update (POST /v1/project/update/{projectId}): the platform builds the deployment branch. */
export const UPDATE_TERMINAL_STATUSES = ['success', 'failure'] as const;
export type DeploymentUpdateStatus = 'queued' | 'in_progress' | (typeof UPDATE_TERMINAL_STATUSES)[number];

export interface UpdateTrigger {
  statusId: string;
}

/** The commit an update builds (the branch head when it was triggered). */
export interface DeploymentCommit {
  sha: string;
  ref: string | null;
  message: string | null;
  /** How many files the commit changed (the documented added, modified and removed lists, counted). */
  filesChanged: number | null;
}

export interface DeploymentUpdate {
  /** One of DeploymentUpdateStatus, or an unknown value passed through as is (not terminal). */
  status: string;
  /** Null while the platform has not resolved the branch head yet. */
  commit: DeploymentCommit | null;
  /** What triggered the update (e.g. "api"), as the API says it. */
  source: string | null;
  logs: string[];
  createdAt: string | null;
  endedAt: string | null;
}

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
