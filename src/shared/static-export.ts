// The staticExport workflow's contract: its id, input, result, status query and continue-as-new carry.
import { defineQuery } from '@temporalio/workflow';
import { observations } from './observation';
import { count, id, record, time, type Shaped } from './shapes';

/** Deterministic per request, so a retried start attaches to the running export. */
export const exportWorkflowId = (domain: string, requestId: string): string => `static-export:${domain}:${requestId}`;

export interface StaticExportInput {
  domain: string;
  version?: string;
  paths?: string[];
}

export interface StaticExportResult {
  jobId: string;
  domain: string;
  pageCount: number;
  bundleUrl: string;
  expiresAt: string;
  sizeBytes: number;
}

export type ExportPhase = 'starting' | 'exporting' | 'bundling' | 'done' | 'failed';

export interface ExportStatus {
  phase: ExportPhase;
  jobId: string | null;
  status: string | null;
  progress: number;
  pageCount: number;
  polls: number;
  lastPollAt: string | null;
  nextPollAt: string | null;
}

export const exportStatusQuery = defineQuery<ExportStatus>('status');

/** What a staticExport run hands to the next one when it continues as new. Plain JSON. */
export const staticExportCarry = record({
  jobId: id,
  /** The most recent poll observations (what the polling policy needs), oldest first. */
  observations,
  polls: count,
  startedAtMs: time,
});
export type StaticExportCarry = Shaped<typeof staticExportCarry>;

/** Optional second argument of staticExport (the public input stays `{domain, version?, paths?}`). */
export interface StaticExportOptions {
  /**
   * Continue as new after this many polls in one run even when the server does not suggest it.
   * Default: only when workflowInfo().continueAsNewSuggested (tests set a small number).
   */
  maxPollsPerRun?: number;
  /** State from the previous run (set by the workflow itself when it continues as new; refused in a start). */
  carry?: StaticExportCarry;
}
