// Why a project's limiter did not answer, as far as the server can tell, and what an operator can do:
// docs/operations.md, "A job waiting on a silent limiter says why" and, for a queue listed in a deployment
// version, "The rate limiter is never versioned". A failing workflow task is read from the history's last
// WorkflowTaskFailed event (the server records the first failure of a series; its retries fail the same
// way, or differently only once the code or the keys change).
import type { Client } from '@temporalio/client';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';

const { PendingWorkflowTaskState, TaskQueueKind, TaskQueueType, VersioningBehavior, WorkflowTaskFailedCause } =
  temporal.api.enums.v1;

/** The failure type of a payload the worker cannot decrypt (src/codec's PayloadKeyError): a person must add a key. */
export const UNDECODABLE_FAILURE_TYPE = 'PayloadKeyError';
const MESSAGE_MAX_CHARS = 300;

interface DeploymentVersionRef {
  deploymentName: string;
  buildId: string;
}

type VersionLike = { deploymentName?: string | null; buildId?: string | null } | null | undefined;
const versionOf = (v: VersionLike): DeploymentVersionRef | undefined =>
  v?.deploymentName && v.buildId ? { deploymentName: v.deploymentName, buildId: v.buildId } : undefined;
const versionName = (v: DeploymentVersionRef): string => `${v.deploymentName}.${v.buildId}`;
const sameVersion = (a: VersionLike, b: DeploymentVersionRef | undefined): boolean =>
  !b ? !a?.deploymentName : a?.deploymentName === b.deploymentName && a?.buildId === b.buildId;

type PendingTask = temporal.api.workflow.v1.IPendingWorkflowTaskInfo | null | undefined;
type ProtoTime = temporal.api.workflow.v1.IPendingWorkflowTaskInfo['startedTime'];

/**
 * What the limiter's pending workflow task is doing at nowMs: waiting for a worker to take it, or
 * taken by one and not done (a worker that stopped or hangs holds it until the task timeout).
 */
export function describePendingTask(task: PendingTask, taskTimeoutMs: number | undefined, nowMs: number): string {
  if (!task) return 'no workflow task pending';
  const ago = (t: ProtoTime) => `${Math.round((nowMs - (optionalTsToMs(t) ?? nowMs)) / 1000)} s`;
  const attempt = (task.attempt ?? 1) > 1 ? ` (attempt ${task.attempt})` : '';
  if (task.state !== PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_STARTED)
    return `its workflow task has waited ${ago(task.scheduledTime)} for a worker${attempt}`;
  const retry = taskTimeoutMs
    ? `; the server gives it to another worker ${Math.round(taskTimeoutMs / 1000)} s after it was taken`
    : '';
  return `a worker took its workflow task ${ago(task.startedTime)} ago and has not completed it${attempt}${retry}`;
}

type TaskFailed = temporal.api.history.v1.IWorkflowTaskFailedEventAttributes;
type Failure = temporal.api.failure.v1.IFailure | null | undefined;

/**
 * A failure's type and message, also when an encrypting failure converter moved the message and stack
 * into encoded attributes. A worker's own error (a codec's, not an ApplicationFailure) has no failure
 * type: its name is the stack's first word.
 */
export function failureText(failure: Failure): { type?: string; message: string } {
  const encoded = failure?.encodedAttributes;
  const encoding = Buffer.from(encoded?.metadata?.encoding ?? []).toString();
  let message = failure?.message ?? '';
  let stack = failure?.stackTrace ?? '';
  if (encoding === 'binary/encrypted') {
    const keyId = Buffer.from(encoded?.metadata?.['encryption-key-id'] ?? []).toString();
    message = `(its message is encrypted with key "${keyId}")`;
  } else if (encoding === 'json/plain') {
    try {
      const attrs = JSON.parse(Buffer.from(encoded?.data ?? []).toString()) as Record<string, unknown>;
      if (typeof attrs.message === 'string') message = attrs.message;
      if (typeof attrs.stack_trace === 'string') stack = attrs.stack_trace;
    } catch {
      // Not the SDK's encoded attributes: the plain message.
    }
  }
  const type = failure?.applicationFailureInfo?.type || /^([A-Za-z_$][\w$]*):/.exec(stack)?.[1];
  return { type: type || undefined, message };
}

/** One line on why a workflow task failed: cause, the failure's type and message, and the worker that failed it. */
export function describeTaskFailure(failed: TaskFailed): string {
  const cause = WorkflowTaskFailedCause[failed.cause ?? 0]?.replace('WORKFLOW_TASK_FAILED_CAUSE_', '');
  const { type, message } = failureText(failed.failure);
  const what = [type, message.replace(/\s+/g, ' ').slice(0, MESSAGE_MAX_CHARS)].filter(Boolean).join(': ');
  const by = failed.identity ? `, by worker ${failed.identity}` : '';
  return `its workflow task fails: ${what || 'no message'} (${cause ?? 'unknown cause'}${by})`;
}

/** Whether a workflow task failure is a payload no worker that took it could decrypt: a missing key. */
export const isUndecodable = (failed: TaskFailed | undefined): boolean =>
  !!failed && failureText(failed.failure).type === UNDECODABLE_FAILURE_TYPE;

/** The run's latest WorkflowTaskFailed event, read from the end of its history (undefined: none near the end). */
async function lastTaskFailure(
  temporalClient: Client,
  workflowId: string,
  runId: string,
): Promise<TaskFailed | undefined> {
  const { history } = await temporalClient.workflowService.getWorkflowExecutionHistoryReverse({
    namespace: temporalClient.options.namespace,
    execution: { workflowId, runId },
    maximumPageSize: 20,
  });
  return (
    history?.events?.find((e) => e.workflowTaskFailedEventAttributes)?.workflowTaskFailedEventAttributes ?? undefined
  );
}

/** The limiter's run (task queue, pinned version if any) and where its queue routes unpinned tasks. */
async function describeRoute(temporalClient: Client, workflowId: string) {
  const described = await temporalClient.workflow.getHandle(workflowId).describe();
  const info = described.raw.workflowExecutionInfo?.versioningInfo;
  const pinned =
    versionOf(info?.versioningOverride?.pinned?.version) ??
    (info?.behavior === VersioningBehavior.VERSIONING_BEHAVIOR_PINNED ? versionOf(info.deploymentVersion) : undefined);
  const queue = await temporalClient.workflowService.describeTaskQueue({
    namespace: temporalClient.options.namespace,
    taskQueue: { name: described.taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  const target = pinned ?? versionOf(queue.versioningInfo?.currentDeploymentVersion);
  const pending = described.raw.pendingWorkflowTask;
  const failed =
    (pending?.attempt ?? 1) > 1 ? await lastTaskFailure(temporalClient, workflowId, described.runId) : undefined;
  const lastPolledMs = Math.max(
    0,
    ...(queue.pollers ?? [])
      .filter((p) => sameVersion(p.deploymentOptions, target))
      .map((p) => Number(p.lastAccessTime?.seconds ?? 0) * 1000),
  );
  return {
    status: described.status.name,
    taskQueue: described.taskQueue,
    runId: described.runId,
    pendingTask: describePendingTask(
      pending,
      optionalTsToMs(described.raw.executionConfig?.defaultWorkflowTaskTimeout),
      Date.now(),
    ),
    failed,
    behavior: pinned ? 'PINNED' : info?.deploymentVersion?.deploymentName ? 'AUTO_UPGRADE' : undefined,
    target,
    lastPolledMs,
  };
}

export interface LimiterDiagnosis {
  /** "(why; remedy)" */
  text: string;
  /** Set when the run's workflow task keeps failing on a payload no worker that took it could decrypt. */
  undecodableRunId?: string;
}

/** Diagnoses the limiter `workflowId` for a worker that serves the limiter queue `ownQueue`. */
export async function diagnoseLimiter(
  temporalClient: Client,
  workflowId: string,
  ownQueue: string,
): Promise<LimiterDiagnosis> {
  const route = await describeRoute(temporalClient, workflowId);
  const text = routeText(route, workflowId, ownQueue);
  return isUndecodable(route.failed) ? { text, undecodableRunId: route.runId } : { text };
}

function routeText(route: Awaited<ReturnType<typeof describeRoute>>, workflowId: string, ownQueue: string): string {
  const { taskQueue, target } = route;
  if (route.status !== 'RUNNING') return `(task queue "${taskQueue}", status ${route.status})`;
  const polled = route.lastPolledMs
    ? `its workers last polled ${Math.round((Date.now() - route.lastPolledMs) / 1000)} s ago`
    : 'no worker of it polls there';
  const routed = target
    ? `task queue "${taskQueue}", whose tasks go only to workers of deployment version ${versionName(target)}` +
      `${route.behavior === 'PINNED' ? ' (the limiter is pinned to it)' : ''}: ${polled}`
    : `task queue "${taskQueue}"`;
  if (taskQueue !== ownQueue) {
    // An older release's limiter queue: its state is a window of grants at most, so a new limiter may take over.
    return (
      `(it runs on ${routed}, which this release does not serve. Retire it: temporal workflow terminate ` +
      `--workflow-id ${workflowId}; the next ask starts it on "${ownQueue}")`
    );
  }
  if (route.failed) return `(task queue "${taskQueue}": ${route.pendingTask}; ${describeTaskFailure(route.failed)})`;
  if (!target) return `(task queue "${taskQueue}": ${route.pendingTask})`;
  return (
    `(it runs on ${routed}. Once deployment ${target.deploymentName} is gone: temporal worker deployment ` +
    `set-current-version --deployment-name ${target.deploymentName} --unversioned --yes)`
  );
}
