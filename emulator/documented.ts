// The admin API's answers as the platform documents them: each documented response's fields and types, from
// Mintlify's OpenAPI documents, which decide over anything written elsewhere (docs/contract.md summarises them).
// Strict on purpose: every answer of the emulator must parse here (test/integration/api-contract.test.ts), so
// it can neither invent a field nor give one another type. The client does not use these: it reads liberally
// (src/api/schemas.ts), since the real API may send less, more, or strings for numbers.
//
// Sources: github.com/mintlify/docs at 3bbce7aa (2026-08-21), published at https://www.mintlify.com/docs/api/...
// - agent jobs: admin-openapi.json, paths /v2/agent/... (pages agent/v2/create-agent-job, get-agent-job,
//   send-message); AgentJob lists no required property.
// - static export: static-export-openapi.json, server https://api.mintlify.com/v1 (pages static-export/start-job,
//   get-job-status, generate-bundle).
// - deployments: openapi.json, server https://api.mintlify.com/v1 (pages update/trigger, update/status). It
//   documents no error response for either operation: their error statuses are SPEC.md's table.
import { z } from 'zod';
import type { AdminApiOperation } from '../src/api/types';

/** OpenAPI `format: date-time` (RFC 3339). */
const dateTime = z.iso.datetime({ offset: true });
/** Update status times: "An ISODate with the specified datetime in UTC" (a string, no format keyword). */
const utcIsoDate = z.iso.datetime();
const paths = z.array(z.string());

/** Error: the body of every documented error response. */
export const documentedError = z.strictObject({ error: z.string().optional() });

/** AgentJob (admin-openapi.json components.schemas.AgentJob). */
export const documentedAgentJob = z.strictObject({
  id: z.string().optional(),
  status: z.enum(['active', 'completed', 'archived', 'failed']).optional(),
  source: z.strictObject({ repository: z.string().optional(), ref: z.string().nullable().optional() }).optional(),
  model: z.string().optional(),
  prLink: z.url().nullable().optional(),
  createdAt: dateTime.optional(),
  archivedAt: dateTime.nullable().optional(),
});

/** StaticExportJob (static-export-openapi.json). `error`: "Present only when status is failed". */
export const documentedStaticExportJob = z.strictObject({
  jobId: z.string(),
  status: z.enum(['queued', 'running', 'completed', 'failed']),
  progress: z.number().min(0).max(100),
  pageCount: z.int(),
  createdAt: dateTime,
  updatedAt: dateTime,
  error: z.string().nullable().optional(),
});

/** BundleResponse (static-export-openapi.json). */
export const documentedBundle = z.strictObject({
  jobId: z.string(),
  bundleUrl: z.url(),
  sizeBytes: z.int(),
  expiresAt: dateTime,
});

/** 202 of POST /project/update/{projectId} (openapi.json). */
export const documentedUpdateTrigger = z.strictObject({ statusId: z.string().optional() });

/** 200 of GET /project/update-status/{statusId} (openapi.json): no property is required. */
export const documentedDeploymentUpdate = z.strictObject({
  _id: z.string().optional(),
  projectId: z.string().optional(),
  createdAt: utcIsoDate.optional(),
  endedAt: utcIsoDate.optional(),
  status: z.enum(['queued', 'in_progress', 'success', 'failure']).optional(),
  summary: z.string().optional(),
  logs: z.array(z.string()).optional(),
  subdomain: z.string().optional(),
  screenshot: z.string().optional(),
  screenshotLight: z.string().optional(),
  screenshotDark: z.string().optional(),
  author: z
    .strictObject({
      name: z.string().optional(),
      avatarUrl: z.string().optional(),
      githubUserId: z.number().optional(),
    })
    .nullable()
    .optional(),
  commit: z
    .strictObject({
      sha: z.string().optional(),
      ref: z.string().optional(),
      message: z.string().optional(),
      filesChanged: z
        .strictObject({ added: paths.optional(), modified: paths.optional(), removed: paths.optional() })
        .optional(),
    })
    .optional(),
  source: z
    .enum(['internal', 'github-app-installation', 'api', 'github', 'dashboard', 'gitlab', 'onboarding'])
    .optional(),
});

export type DocumentedAgentJob = z.infer<typeof documentedAgentJob>;
export type DocumentedStaticExportJob = z.infer<typeof documentedStaticExportJob>;
export type DocumentedBundle = z.infer<typeof documentedBundle>;
export type DocumentedUpdateTrigger = z.infer<typeof documentedUpdateTrigger>;
export type DocumentedDeploymentUpdate = z.infer<typeof documentedDeploymentUpdate>;
export type DocumentedError = z.infer<typeof documentedError>;

export interface DocumentedOperation {
  /** The documented success status and its body. */
  success: { status: number; body: z.ZodType };
  /** The documented error statuses (each with an Error body). */
  errors: readonly number[];
}

/** Every operation the client calls, as documented (errors of the deployment operations: SPEC.md). */
export const DOCUMENTED_OPERATIONS: Readonly<Record<AdminApiOperation, DocumentedOperation>> = {
  createAgentJob: { success: { status: 201, body: documentedAgentJob }, errors: [400, 429] },
  getAgentJob: { success: { status: 200, body: documentedAgentJob }, errors: [404] },
  sendAgentMessage: { success: { status: 200, body: documentedAgentJob }, errors: [400, 404, 429] },
  startExport: { success: { status: 202, body: documentedStaticExportJob }, errors: [400, 401, 403] },
  getExport: { success: { status: 200, body: documentedStaticExportJob }, errors: [401, 404] },
  generateBundle: { success: { status: 200, body: documentedBundle }, errors: [401, 404, 409] },
  triggerUpdate: { success: { status: 202, body: documentedUpdateTrigger }, errors: [401, 403, 404, 429] },
  getUpdateStatus: { success: { status: 200, body: documentedDeploymentUpdate }, errors: [401, 404] },
};

/**
 * How an answer departs from the documentation, or null when it is as documented: a success must have the
 * documented status and body; any other status must carry the Error body (whether or not the operation
 * documents that status: authentication and throttling answer on every path).
 */
export function undocumentedAnswer(operation: AdminApiOperation, status: number, body: unknown): string | null {
  const documented = DOCUMENTED_OPERATIONS[operation];
  if (status < 400 && status !== documented.success.status)
    return `${operation} answered ${status}, documented ${documented.success.status}`;
  const schema = status < 400 ? documented.success.body : documentedError;
  const parsed = schema.safeParse(body);
  if (parsed.success) return null;
  const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  return `${operation} ${status}: ${issues}`;
}
