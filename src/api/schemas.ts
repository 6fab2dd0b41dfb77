// Boundary validation of admin API responses (docs/contract.md: "be liberal in what you accept"): unknown fields
// are ignored, numbers may arrive as strings, unknown status values pass through (the client logs each
// once and callers treat them as not yet terminal). What cannot be used becomes MalformedResponse.
import { z } from 'zod';
import type { AgentJob, Bundle, DeploymentUpdate, StaticExportJob, UpdateTrigger } from './types';

/** A string id; numeric ids are accepted and turned into strings. */
const id = z.union([z.string().min(1), z.number().finite()]).transform(String);
/** A number that may arrive as a numeric string ("42", " 3.5 "). */
const numeric = z.preprocess((v) => (typeof v === 'string' && v.trim() !== '' ? Number(v) : v), z.number().finite());
const nullableString = z
  .string()
  .nullish()
  .transform((v) => v ?? null);

export const agentJobSchema = z
  .object({
    id,
    status: z.string().min(1),
    source: z
      .object({ repository: nullableString, ref: nullableString })
      .nullish()
      .transform((s) => s ?? { repository: null, ref: null }),
    model: nullableString,
    prLink: nullableString,
    createdAt: z.string(),
    archivedAt: nullableString,
  })
  .transform((j): AgentJob => j);

export const staticExportJobSchema = z
  .object({
    jobId: id,
    status: z.string().min(1),
    progress: numeric.pipe(z.number().min(0).max(100)).optional(),
    pageCount: numeric.pipe(z.number().int().min(0)).optional(),
    createdAt: z.string(),
    updatedAt: z.string().optional(),
    error: z.string().nullish(),
  })
  .transform((j): StaticExportJob => ({
    jobId: j.jobId,
    status: j.status,
    progress: j.progress ?? 0,
    pageCount: j.pageCount ?? 0,
    createdAt: j.createdAt,
    updatedAt: j.updatedAt ?? j.createdAt,
    ...(j.error ? { error: j.error } : {}),
  }));

export const bundleSchema = z
  .object({
    jobId: id,
    bundleUrl: z.url({ protocol: /^https?$/ }),
    sizeBytes: numeric.pipe(z.number().int().min(0)),
    expiresAt: z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'expiresAt must be a date'),
  })
  .transform((b): Bundle => b);

export const updateTriggerSchema = z.object({ statusId: id }).transform((t): UpdateTrigger => t);

/** filesChanged: a count, a numeric string, or a list of paths (counted). */
const fileCount = z
  .union([numeric.pipe(z.number().int().min(0)), z.array(z.unknown()).transform((a) => a.length)])
  .nullish()
  .transform((v) => v ?? null);

export const deploymentUpdateSchema = z
  .object({
    status: z.string().min(1),
    commit: z
      .object({ sha: z.string().min(1), ref: nullableString, message: nullableString, filesChanged: fileCount })
      .nullish()
      .transform((c) => c ?? null),
    // Liberal: a label, or an object the client has no use for.
    source: z
      .unknown()
      .optional()
      .transform((s) => (typeof s === 'string' ? s : null)),
    logs: z
      .union([z.array(z.unknown()).transform((l) => l.map(String)), z.string().transform((l) => l.split('\n'))])
      .nullish()
      .transform((l) => l ?? []),
    createdAt: nullableString,
    endedAt: nullableString,
  })
  .transform((u): DeploymentUpdate => u);

/** `{"error": string}` bodies of error responses (anything else is tolerated). */
export const errorBodySchema = z.object({ error: z.string() });

/** Known statuses per kind, for the "unknown status" log. */
export const KNOWN_AGENT_STATUSES: ReadonlySet<string> = new Set(['active', 'completed', 'archived', 'failed']);
export const KNOWN_EXPORT_STATUSES: ReadonlySet<string> = new Set(['queued', 'running', 'completed', 'failed']);
export const KNOWN_UPDATE_STATUSES: ReadonlySet<string> = new Set(['queued', 'in_progress', 'success', 'failure']);
