// Typed client library: what other services (and the CLI) import to start, await, query and signal
// the docs-admin workflows. Inputs are validated with src/validation before anything is started;
// starts carry a one-line summary, details and the Docs* search attributes for the Web UI; callers
// pass a requestId to make a start idempotent (same id -> the same workflow, never a second one).
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import {
  Client,
  Connection,
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  type ConnectionOptions,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
} from '@temporalio/client';
import { ApplicationFailure, TemporalFailure, WorkflowExecutionAlreadyStartedError, type SearchAttributePair } from '@temporalio/common';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { AgentJob } from '../api/types';
import { loadTemporalConfig } from '../config';
import {
  DEFAULT_TASK_QUEUE,
  SearchAttr,
  WorkflowType,
  agentStatusQuery,
  agentWorkflowId,
  exportStatusQuery,
  exportWorkflowId,
  jobIdUpdate,
  keeperStatusQuery,
  keeperWorkflowId,
  projectFairnessKey,
  publishSignal,
  sendMessageUpdate,
  type AgentJobInput,
  type AgentJobResult,
  type AgentStatus,
  type BundleKeeperInput,
  type ExportStatus,
  type KeeperStatus,
  type SinkConfig,
  type StaticExportInput,
  type StaticExportResult,
} from '../shared';
import { promptPreview, validateAgentJobInput, validatePrompt } from '../policies/validation/agent';
import { deploymentProblems, sinkProblems } from '../policies/validation/deployment';
import { exportInputProblems, hostnameProblem, normalizeExportInput } from '../policies/validation/export';

// Workflow signatures, by type name: the client never imports workflow code.
export type StaticExportWorkflow = (input: StaticExportInput) => Promise<StaticExportResult>;
export type AgentJobWorkflow = (input: AgentJobInput) => Promise<AgentJobResult>;
export type BundleKeeperWorkflow = (input: BundleKeeperInput) => Promise<void>;

/** Thrown before anything is started when an input is invalid. `problems` lists every one. */
export class InvalidInputError extends Error {
  override readonly name = 'InvalidInputError';
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
  }
}

/** Thrown by connectClient when no Temporal server answers. */
export class TemporalUnreachableError extends Error {
  override readonly name = 'TemporalUnreachableError';
  constructor(
    readonly address: string,
    options?: { cause?: unknown },
  ) {
    super(unreachableMessage(address, options?.cause), options);
  }
}

function check(problems: string[]): void {
  if (problems.length > 0) throw new InvalidInputError(problems);
}

// ---- connection ------------------------------------------------------------------------------------

/** One-line reason for a failed connection, naming the address and what to do. */
export function unreachableMessage(address: string, cause?: unknown): string {
  const raw = cause instanceof Error ? cause.message : '';
  const detail = /connection refused|ECONNREFUSED/i.test(raw)
    ? 'connection refused'
    : /timed? ?out|deadline/i.test(raw)
      ? 'timed out'
      : /dns|ENOTFOUND|resolve/i.test(raw)
        ? 'host not found'
        : raw.split('\n')[0]?.slice(0, 160) || undefined;
  return (
    `cannot reach the Temporal server at ${address}` +
    (detail ? ` (${detail})` : '') +
    '; start one with `npm run server` or set TEMPORAL_ADDRESS'
  );
}

/**
 * Connection options from the environment through @temporalio/envconfig (TEMPORAL_ADDRESS,
 * TEMPORAL_API_KEY, TLS settings, TEMPORAL_PROFILE/config file), with this project's default address.
 */
export function temporalConnectionOptions(env: NodeJS.ProcessEnv = process.env): ConnectionOptions & { address: string } {
  const vars = Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
  const { connectionOptions } = loadClientConnectConfig({ overrideEnvVars: vars });
  const { address } = loadTemporalConfig(env);
  return { ...(connectionOptions as ConnectionOptions), address: env.TEMPORAL_ADDRESS || connectionOptions.address || address };
}

/** Splits host:port, [v6]:port or a bare host (port 7233). */
export function splitAddress(address: string): { host: string; port: number } {
  const match = /^\[([^\]]+)\](?::(\d+))?$/.exec(address) ?? /^([^:]+)(?::(\d+))?$/.exec(address);
  if (!match) throw new TemporalUnreachableError(address, { cause: new Error('TEMPORAL_ADDRESS must be host:port') });
  return { host: match[1] as string, port: match[2] ? Number(match[2]) : 7233 };
}

async function probeTcp(address: string, timeoutMs: number): Promise<void> {
  const { host, port } = splitAddress(address);
  await new Promise<void>((resolve, reject) => {
    const socket = net.connect({ host, port });
    const fail = (err: Error) => {
      socket.destroy();
      reject(new TemporalUnreachableError(address, { cause: err }));
    };
    socket.setTimeout(timeoutMs, () => fail(new Error(`connect timed out after ${timeoutMs}ms`)));
    socket.once('error', fail);
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
  });
}

export interface ConnectClientOptions {
  /** Give up connecting after this long (default 5000 ms). */
  connectTimeoutMs?: number;
}

/**
 * A Client for TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE (defaults 127.0.0.1:7233, default). Fails fast
 * with a TemporalUnreachableError (one clear line) when no server answers.
 */
export async function connectClient(env: NodeJS.ProcessEnv = process.env, options: ConnectClientOptions = {}): Promise<Client> {
  const connectionOptions = temporalConnectionOptions(env);
  const { namespace } = loadTemporalConfig(env);
  const timeoutMs = options.connectTimeoutMs ?? 5_000;
  // A plain TCP probe first: a refused or unroutable address fails in milliseconds with the real
  // reason, instead of gRPC's reconnect loop running out the whole connect timeout.
  await probeTcp(connectionOptions.address, timeoutMs);
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...connectionOptions, connectTimeout: timeoutMs });
  } catch (err) {
    throw new TemporalUnreachableError(connectionOptions.address, { cause: err });
  }
  return new Client({ connection, namespace });
}

/** The task queue a starter uses: the option, else TEMPORAL_TASK_QUEUE, else docs-admin. */
function taskQueueOf(options: { taskQueue?: string }): string {
  return options.taskQueue || process.env.TEMPORAL_TASK_QUEUE || DEFAULT_TASK_QUEUE;
}

export interface StartOptions {
  /** Same requestId -> same workflow id: a retried start attaches to the first one. Default: random. */
  requestId?: string;
  /** Default TEMPORAL_TASK_QUEUE or docs-admin. */
  taskQueue?: string;
}

// ---- staticExport -----------------------------------------------------------------------------------

export function exportSummary(input: StaticExportInput): string {
  return `Export ${input.domain}${input.version ? ` (version ${input.version})` : ''}`;
}

/** Static details as a Markdown list: the Web UI runs plain lines together into one paragraph. */
function markdownList(items: [label: string, value: string][]): string {
  return items.map(([label, value]) => `- **${label}**: ${value}`).join('\n');
}

function exportDetails(input: StaticExportInput, requestId: string): string {
  return markdownList([
    ['domain', input.domain],
    ['version', input.version ?? 'latest published'],
    ['paths', input.paths ? input.paths.join(', ') : 'all pages'],
    ['request id', requestId],
  ]);
}

/**
 * Starts a staticExport (or, with a requestId already used, returns the existing one). Throws
 * InvalidInputError before starting anything when the input is invalid.
 */
export async function startExport(
  client: Client,
  input: StaticExportInput,
  options: StartOptions = {},
): Promise<WorkflowHandle<StaticExportWorkflow>> {
  check(exportInputProblems(input));
  const normalized = normalizeExportInput(input);
  const requestId = options.requestId ?? randomUUID();
  check(validateRequestIdOnly(requestId));
  const workflowId = exportWorkflowId(normalized.domain, requestId);
  try {
    return await client.workflow.start<StaticExportWorkflow>(WorkflowType.staticExport, {
      workflowId,
      taskQueue: taskQueueOf(options),
      args: [normalized],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: exportSummary(normalized),
      staticDetails: exportDetails(normalized, requestId),
      typedSearchAttributes: [{ key: SearchAttr.domain, value: normalized.domain }],
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return client.workflow.getHandle<StaticExportWorkflow>(workflowId);
    throw err;
  }
}

function validateRequestIdOnly(requestId: string): string[] {
  return validateAgentJobInput({ projectId: 'p', prompt: 'p', requestId }).filter((p) => p.startsWith('requestId'));
}

export interface ProgressOptions<S> {
  /** Called with each new status query result while waiting. */
  onProgress?: (status: S) => void;
  /** How often to query the workflow's status (default 500 ms). */
  progressIntervalMs?: number;
}

/** Awaits a workflow's result, querying its `status` query meanwhile for onProgress. */
async function awaitWithProgress<R, S>(handle: WorkflowHandle, query: string, options: ProgressOptions<S>): Promise<R> {
  const result = handle.result() as Promise<R>;
  if (!options.onProgress) return result;
  const onProgress = options.onProgress;
  let done = false;
  const poller = (async () => {
    while (!done) {
      try {
        const status = await handle.client.withDeadline(Date.now() + 5_000, () => handle.query<S>(query));
        if (!done) onProgress(status);
      } catch {
        // No worker yet, or the workflow just closed: the result decides.
      }
      await new Promise((resolve) => setTimeout(resolve, options.progressIntervalMs ?? 500));
    }
  })();
  try {
    return await result;
  } finally {
    done = true;
    await poller;
  }
}

export async function awaitExport(
  client: Client,
  workflowId: string,
  options: ProgressOptions<ExportStatus> = {},
): Promise<StaticExportResult & { workflowId: string }> {
  const handle = client.workflow.getHandle<StaticExportWorkflow>(workflowId);
  const result = await awaitWithProgress<StaticExportResult, ExportStatus>(handle, exportStatusQuery.name, options);
  return { workflowId, ...result };
}

/** startExport, then awaitExport. */
export async function runExport(
  client: Client,
  input: StaticExportInput,
  options: StartOptions & ProgressOptions<ExportStatus> = {},
): Promise<StaticExportResult & { workflowId: string }> {
  const handle = await startExport(client, input, options);
  return awaitExport(client, handle.workflowId, options);
}

// ---- agentJob ---------------------------------------------------------------------------------------

export function agentSummary(input: AgentJobInput): string {
  return `Agent job for project ${input.projectId}: ${promptPreview(input.prompt)}`;
}

export interface StartedAgentJob {
  workflowId: string;
  /** The admin API's job id, known as soon as the workflow created the job. */
  jobId: string;
  handle: WorkflowHandle<AgentJobWorkflow>;
}

/**
 * Starts an agentJob and returns once the API job exists (update-with-start on the jobId update).
 * A requestId makes it idempotent: the same (projectId, requestId) returns the same job and never
 * creates a second one (and so never a second pull request).
 */
export async function startAgentJob(client: Client, input: AgentJobInput, options: Omit<StartOptions, 'requestId'> = {}): Promise<StartedAgentJob> {
  const requestId = input.requestId ?? randomUUID();
  const withId: AgentJobInput = { projectId: input.projectId, prompt: input.prompt, requestId };
  check(validateAgentJobInput(withId));
  const workflowId = agentWorkflowId(withId.projectId, requestId);
  const startWorkflowOperation = new WithStartWorkflowOperation<AgentJobWorkflow>(WorkflowType.agentJob, {
    workflowId,
    taskQueue: taskQueueOf(options),
    args: [withId],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    staticSummary: agentSummary(withId),
    staticDetails: markdownList([
      ['project', withId.projectId],
      ['request id', requestId],
      ['prompt', promptPreview(withId.prompt, 200)],
    ]),
    typedSearchAttributes: [{ key: SearchAttr.projectId, value: withId.projectId }],
    // Its workflow and activity tasks share the task queue fairly with other projects' (server fairness).
    priority: { fairnessKey: projectFairnessKey(withId.projectId) },
  });
  const handle = client.workflow.getHandle<AgentJobWorkflow>(workflowId);
  try {
    const jobId = await client.workflow.executeUpdateWithStart(jobIdUpdate, { startWorkflowOperation });
    return { workflowId, jobId, handle };
  } catch (err) {
    // The same requestId was used by a workflow that has already closed: report that job.
    if (err instanceof WorkflowExecutionAlreadyStartedError || (err instanceof Error && err.cause instanceof WorkflowExecutionAlreadyStartedError)) {
      const status = await handle.query(agentStatusQuery).catch(() => undefined);
      const jobId = status?.jobId ?? (await handle.result()).jobId;
      return { workflowId, jobId, handle };
    }
    throw err;
  }
}

export async function awaitAgentJob(
  client: Client,
  workflowId: string,
  options: ProgressOptions<AgentStatus> = {},
): Promise<AgentJobResult & { workflowId: string }> {
  const handle = client.workflow.getHandle<AgentJobWorkflow>(workflowId);
  const result = await awaitWithProgress<AgentJobResult, AgentStatus>(handle, agentStatusQuery.name, options);
  return { workflowId, ...result };
}

/** Sends a follow-up prompt to a running agent job; resolves with the refreshed job. */
export async function sendAgentMessage(client: Client, workflowId: string, prompt: string): Promise<AgentJob> {
  check(validatePrompt(prompt));
  return client.workflow.getHandle(workflowId).executeUpdate(sendMessageUpdate, { args: [prompt] });
}

// ---- bundleKeeper -------------------------------------------------------------------------------------

export function keeperInputProblems(input: BundleKeeperInput): string[] {
  const domainProblem = hostnameProblem(input.domain);
  const sink = sinkProblems(input.sink);
  return [
    ...(domainProblem ? [domainProblem] : []),
    ...sink,
    ...(input.version !== undefined && input.version.trim() === '' ? ['version, when given, must be a non-empty string'] : []),
    ...deploymentProblems({ kind: input.kind, features: input.features, sinkType: sink.length === 0 ? (input.sink as SinkConfig).type : undefined }),
  ];
}

function describeSink(sink: SinkConfig): string {
  switch (sink.type) {
    case 'file':
      return `config file ${sink.path}`;
    case 'webhook':
      return `webhook ${new URL(sink.url).origin}`;
    case 'command':
      return 'command';
    case 'mirror':
      return `mirror ${sink.dir} -> ${sink.urlPrefix}`;
  }
}

/**
 * Starts the domain's bundleKeeper, or returns the running one (one keeper per domain: the workflow
 * id is keeperWorkflowId(domain) and an existing run is kept, whatever input this call carries).
 */
export async function ensureKeeper(
  client: Client,
  input: BundleKeeperInput,
  options: Omit<StartOptions, 'requestId'> = {},
): Promise<WorkflowHandle<BundleKeeperWorkflow>> {
  check(keeperInputProblems(input));
  return client.workflow.start<BundleKeeperWorkflow>(WorkflowType.bundleKeeper, {
    workflowId: keeperWorkflowId(input.domain),
    taskQueue: taskQueueOf(options),
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    staticSummary: `Bundle keeper for ${input.domain} (${input.kind ?? 'client-hosted'}, ${input.sink.type} sink)`,
    staticDetails: markdownList([
      ['domain', input.domain],
      ['kind', input.kind ?? 'client-hosted'],
      ['sink', describeSink(input.sink)],
      ['version', input.version ?? 'latest published'],
    ]),
    typedSearchAttributes: [{ key: SearchAttr.domain, value: input.domain }],
  });
}

/**
 * Tells the domain's keeper that new content is published (it re-exports). The keeper is
 * keeperWorkflowId(domain) or, when a keeper schedule started it (the server suffixes scheduled
 * workflow ids with the time), the running bundleKeeper whose DocsDomain is the domain. Throws if none runs.
 */
export async function publish(client: Client, domain: string): Promise<{ workflowId: string }> {
  const problem = hostnameProblem(domain);
  if (problem) throw new InvalidInputError([problem]);
  const workflowId = keeperWorkflowId(domain);
  try {
    await client.workflow.getHandle(workflowId).signal(publishSignal);
    return { workflowId };
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
    const query =
      `WorkflowType = '${WorkflowType.bundleKeeper}' AND ExecutionStatus = 'Running' AND ` +
      `${SearchAttr.domain.name} = '${domain.replace(/'/g, '')}'`;
    for await (const execution of client.workflow.list({ query })) {
      await client.workflow.getHandle(execution.workflowId, execution.runId).signal(publishSignal);
      return { workflowId: execution.workflowId };
    }
    throw new Error(`no bundle keeper is running for ${domain} (start one with: keep --domain ${domain} ...)`, { cause: err });
  }
}

export async function keeperStatus(client: Client, domain: string): Promise<KeeperStatus> {
  return client.workflow.getHandle(keeperWorkflowId(domain)).query(keeperStatusQuery);
}

// ---- status -----------------------------------------------------------------------------------------

export interface WorkflowStatusReport {
  workflowId: string;
  runId: string;
  type: string;
  /** RUNNING, COMPLETED, FAILED, ... */
  status: string;
  taskQueue: string;
  startTime: string;
  closeTime: string | null;
  summary: string | null;
  searchAttributes: Record<string, string>;
  /** The workflow's `status` query (export/agent/keeper status), null when it did not answer. */
  details: ExportStatus | AgentStatus | KeeperStatus | Record<string, unknown> | null;
  /** The result, when COMPLETED. */
  result?: unknown;
  /** `type: message` of the failure, when FAILED. */
  failure?: string;
}

/** A failure's `type: message`, from the innermost ApplicationFailure (ActivityFailure -> cause). */
export function failureReason(err: unknown): string {
  let current: unknown = err;
  let best: string | undefined;
  for (let depth = 0; current instanceof Error && depth < 10; depth++) {
    if (current instanceof ApplicationFailure) {
      best ??= `${current.type ?? 'Error'}: ${current.message}`;
      break;
    }
    if (current instanceof TemporalFailure && !best && !(current.cause instanceof Error)) best = `${current.name}: ${current.message}`;
    if (!(current.cause instanceof Error)) {
      best ??= current.message;
      break;
    }
    current = current.cause;
  }
  return (best ?? String(err)).split('\n')[0] as string;
}

/** describe() plus the `status` query (bounded by timeoutMs, since a workflow without a worker never answers). */
export async function getStatus(client: Client, workflowId: string, options: { queryTimeoutMs?: number } = {}): Promise<WorkflowStatusReport> {
  const handle = client.workflow.getHandle(workflowId);
  let description: WorkflowExecutionDescription;
  try {
    description = await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) {
      throw new Error(`no workflow with id "${workflowId}" in namespace ${client.options.namespace}`, { cause: err });
    }
    throw err;
  }
  const details = await client
    .withDeadline(Date.now() + (options.queryTimeoutMs ?? 3_000), () => handle.query<WorkflowStatusReport['details']>('status'))
    .catch(() => null);
  const searchAttributes: Record<string, string> = {};
  for (const pair of description.typedSearchAttributes.getAll() as SearchAttributePair[]) {
    if (Object.values(SearchAttr).some((key) => key.name === pair.key.name)) searchAttributes[pair.key.name] = String(pair.value);
  }
  const report: WorkflowStatusReport = {
    workflowId,
    runId: description.runId,
    type: description.type,
    status: description.status.name,
    taskQueue: description.taskQueue,
    startTime: description.startTime.toISOString(),
    closeTime: description.closeTime ? description.closeTime.toISOString() : null,
    summary: (await description.staticSummary().catch(() => undefined)) ?? null,
    searchAttributes,
    details,
  };
  if (description.status.name === 'COMPLETED') {
    report.result = await handle.result().catch(() => undefined);
  } else if (description.status.name === 'FAILED') {
    report.failure = await handle.result().then(
      () => undefined,
      (err: unknown) => failureReason(err),
    );
  }
  return report;
}
