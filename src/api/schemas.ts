// Boundary validation of admin API responses (docs/contract.md: "be liberal in what you accept"): unknown fields
// are ignored, numbers may arrive as strings, statuses are trimmed and lower-cased and unknown ones pass through (the client logs each
// once and callers treat them as not yet terminal). What cannot be used becomes MalformedResponse; a field
// nothing uses never fails a call (`.catch`): the documented shapes (./documented.ts) are what the platform
// promises, not what it will always send.
import { z } from 'zod';
import type { AgentJob } from '../shared/agent-job-record';

/** A string id; numeric ids are accepted and turned into strings. */
const id = z.union([z.string().min(1), z.number().finite()]).transform(String);
/** A number that may arrive as a numeric string ("42", " 3.5 "). */
const numeric = z.preprocess((v) => (typeof v === 'string' && v.trim() !== '' ? Number(v) : v), z.number().finite());
/** A status, compared by the workflows as written in the documentation: ` Completed ` reads `completed`. */
const status = z
  .string()
  .trim()
  .min(1)
  .transform((s) => s.toLowerCase());
const nullableString = z
  .string()
  .nullish()
  .transform((v) => v ?? null);

export const agentJobSchema = z
  .object({
    id,
    status,
    source: z
      .object({ repository: nullableString.catch(null), ref: nullableString.catch(null) })
      .nullish()
      .transform((s) => s ?? { repository: null, ref: null })
      .catch({ repository: null, ref: null }),
    model: nullableString.catch(null),
    prLink: nullableString,
    // Not required by the document, but agentJob's result carries it as a string (src/shared/agent-job.ts).
    createdAt: z.string(),
    archivedAt: nullableString.catch(null),
  })
  .transform((j): AgentJob => j);

export const staticExportJobSchema = z
  .object({
    jobId: id,
    /** One of ExportJobStatus, or an unknown value passed through as is. */
    status,
    /** 0..100 */
    progress: numeric.pipe(z.number().min(0).max(100)).optional(),
    pageCount: numeric.pipe(z.number().int().min(0)).optional(),
    createdAt: z.string(),
    updatedAt: z.string().optional().catch(undefined),
    /** Present only when status is failed. */
    error: z.string().nullish().catch(undefined),
  })
  .transform((j) => ({
    jobId: j.jobId,
    status: j.status,
    progress: j.progress ?? 0,
    pageCount: j.pageCount ?? 0,
    createdAt: j.createdAt,
    updatedAt: j.updatedAt ?? j.createdAt,
    ...(j.error ? { error: j.error } : {}),
  }));

export const bundleSchema = z.object({
  jobId: id,
  bundleUrl: z.url({ protocol: /^https?$/ }),
  sizeBytes: numeric.pipe(z.number().int().min(0)),
  /** ISO-8601 instant after which bundleUrl stops working. */
  expiresAt: z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'expiresAt must be a date'),
});

export const updateTriggerSchema = z.object({ statusId: id });

const pathList = z.array(z.unknown()).catch([]);

/**
 * filesChanged as a count: the documented `{added, modified, removed}` lists (openapi.json), or an earlier
 * shape (a count, a numeric string, one list). A count, not the paths: the answer is an activity result
 * kept in workflow history, and nothing reads the paths. Anything else is null, never a failed call.
 */
const fileCount = z
  .union([
    z
      .object({ added: pathList.optional(), modified: pathList.optional(), removed: pathList.optional() })
      .transform((f) => (f.added?.length ?? 0) + (f.modified?.length ?? 0) + (f.removed?.length ?? 0)),
    numeric.pipe(z.number().int().min(0)),
    z.array(z.unknown()).transform((a) => a.length),
  ])
  .nullish()
  .transform((v) => v ?? null)
  .catch(null);

/**
 * The commit an update builds (the branch head when it was triggered); without a usable sha it is null
 * (the keeper then says the update named no commit).
 */
const deploymentCommit = z
  .object({
    sha: z.string().min(1),
    ref: nullableString.catch(null),
    message: nullableString.catch(null),
    /** How many files the commit changed (the documented added, modified and removed lists, counted). */
    filesChanged: fileCount,
  })
  .nullish()
  .transform((c) => c ?? null)
  .catch(null);

/** A deployment update (POST /v1/project/update/{projectId}): the platform builds the deployment branch. */
export const deploymentUpdateSchema = z.object({
  /** One of DeploymentUpdateStatus, or an unknown value passed through as is (not terminal). */
  status,
  /** Null while the platform has not resolved the branch head yet. */
  commit: deploymentCommit,
  /** What triggered the update (e.g. "api"), as the API says it: documented as a label; anything else is of no use. */
  source: z
    .unknown()
    .optional()
    .transform((s) => (typeof s === 'string' ? s : null)),
  logs: z
    .union([z.array(z.unknown()).transform((l) => l.map(String)), z.string().transform((l) => l.split('\n'))])
    .nullish()
    .transform((l) => l ?? [])
    .catch([]),
  createdAt: nullableString.catch(null),
  endedAt: nullableString.catch(null),
});

/** `{"error": string}` bodies of error responses (anything else is tolerated). */
export const errorBodySchema = z.object({ error: z.string() });

/** Known statuses per kind, for the "unknown status" log. */
export const KNOWN_AGENT_STATUSES: ReadonlySet<string> = new Set(['active', 'completed', 'archived', 'failed']);
export const KNOWN_EXPORT_STATUSES: ReadonlySet<string> = new Set(['queued', 'running', 'completed', 'failed']);
export const KNOWN_UPDATE_STATUSES: ReadonlySet<string> = new Set(['queued', 'in_progress', 'success', 'failure']);
