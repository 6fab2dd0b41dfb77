// Emulator options. Every duration is configurable so tests run in seconds; the defaults give a
// demo-friendly pace (agent jobs ~8 s, exports ~2 s queued + ~10 s running).
import type { AdminApiOperation } from '../src/api/types';

export type AgentOutcome = 'pr' | 'no-change' | 'archived' | 'failed';
export type ProgressShape = 'linear' | 'slow-start' | 'stall-at-99' | 'jumps';
export type RetryAfterForm = 'seconds' | 'http-date' | 'none';

export interface EmulatorOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Base of bundle links (default http://<host>:<port>); set it when clients reach the emulator by another name. */
  publicUrl?: string;
  /** Clock for job progress, rate-limit windows and link expiry. */
  now: () => number;

  /** How long an agent job stays active after a create or a follow-up message. */
  agentActiveMs: number;
  /**
   * Per-job durations (benchmarks spread them): the active time of an agent job by its prompt, the
   * running time of an export by its domain, or the build of an update by its project; undefined keeps
   * agentActiveMs / exportDurationMs / updateBuildMs.
   */
  durationFor?: (kind: 'agent' | 'export' | 'update', key: string) => number | undefined;
  /** How an agent run ends; default: markers in the prompt ("[no-change]", "[fail]", "[archive]"), else a PR. */
  agentOutcome: (prompt: string, projectId: string) => AgentOutcome;
  /** `<org>/<repo>` of a project's docs repository. */
  repositoryFor: (projectId: string) => string;
  model: string;

  exportQueuedMs: number;
  exportDurationMs: number;
  /** Pages of an export without explicit paths (with paths: one page per path). */
  exportTotalPages: number;
  progressShape: ProgressShape;
  /** Error text when an export of this domain fails, or null; default: domains starting "fail-" fail. */
  exportFailure: (domain: string) => string | null;

  /** A deployment update waits this long in the queue, then builds for updateBuildMs. */
  updateQueuedMs: number;
  updateBuildMs: number;
  /** Projects whose updates fail (the build breaks) until the list changes. */
  failingUpdateProjects: string[];
  /** Projects the organization does not have: a trigger of their update answers 404. */
  missingProjects: string[];
  /** Update triggers share one budget per organization (per API key here). */
  updateRateLimit: { limit: number; windowMs: number };

  /** Agent creates and messages share one budget per project. */
  rateLimit: { limit: number; windowMs: number };
  retryAfterForm: RetryAfterForm;

  /** Lifetime of a bundle link. */
  bundleTtlMs: number;
  /** Keys without static export (403 on the export routes). */
  nonEnterpriseKeys: string[];
  /** Keys that get 401 (the error text echoes the key, as careless servers do: it tests redaction). */
  revokedKeys: string[];
  /**
   * When non-empty, the only keys accepted (any other gets 401): several keys are valid at once during a
   * rotation. Emulator.addKey / revokeKey (or POST /_emulator/keys) change it at runtime.
   */
  validKeys: string[];
  /** Keys without the write scope: 403 on every method but GET and HEAD. */
  readOnlyKeys: string[];
  /** When non-empty, the client addresses (exact IPs) the keys accept; any other caller gets 403. */
  ipAllowlist: string[];

  /**
   * Liberal-but-legal responses the real API may send (docs/contract.md "be liberal in what you accept"):
   * numbers as strings, extra fields, and status values the client does not know.
   */
  quirks: ResponseQuirks;

  /** Seed of the fault RNG. */
  seed: number;
  /** Log one line per request to stderr. */
  logRequests: boolean;
  /** Sees every answer of an API route that has a JSON body, as sent (tests check them against the document). */
  onAnswer?: (answer: EmulatorAnswer) => void;
}

export interface EmulatorAnswer {
  route: AdminApiOperation;
  status: number;
  body: unknown;
}

export interface ResponseQuirks {
  /** progress, pageCount, sizeBytes sent as strings ("42"). */
  numbersAsStrings?: boolean;
  /** Unknown fields added to every object. */
  extraFields?: boolean;
  /** Reported instead of the agent status 'active' (an unknown, not-yet-terminal value). */
  activeStatusAlias?: string;
  /** Reported instead of the export status 'running'. */
  runningStatusAlias?: string;
}

export function defaultAgentOutcome(prompt: string): AgentOutcome {
  const p = prompt.toLowerCase();
  if (p.includes('[fail]')) return 'failed';
  if (p.includes('[archive]')) return 'archived';
  if (p.includes('[no-change]')) return 'no-change';
  return 'pr';
}

export function defaultExportFailure(domain: string): string | null {
  return domain.startsWith('fail-')
    ? `render failed: page /index of ${domain} threw "ReferenceError: window is not defined"`
    : null;
}

export const DEFAULT_OPTIONS: EmulatorOptions = {
  host: '127.0.0.1',
  port: 4010,
  now: () => Date.now(),
  agentActiveMs: 8_000,
  agentOutcome: defaultAgentOutcome,
  repositoryFor: (projectId) => `docs-emulator/${projectId.replace(/[^A-Za-z0-9._-]/g, '-') || 'docs'}`,
  model: 'emulated-agent-1',
  exportQueuedMs: 2_000,
  exportDurationMs: 10_000,
  exportTotalPages: 24,
  progressShape: 'linear',
  exportFailure: defaultExportFailure,
  updateQueuedMs: 500,
  updateBuildMs: 5_000,
  failingUpdateProjects: [],
  missingProjects: [],
  updateRateLimit: { limit: 10, windowMs: 10_000 },
  rateLimit: { limit: 100, windowMs: 60 * 60 * 1000 },
  retryAfterForm: 'seconds',
  bundleTtlMs: 60 * 60 * 1000,
  nonEnterpriseKeys: [],
  revokedKeys: [],
  validKeys: [],
  readOnlyKeys: [],
  ipAllowlist: [],
  quirks: {},
  seed: 1,
  logRequests: false,
};
