// Why a project's limiter did not answer, as far as the server can tell, and what an operator can do.
// The server hands a workflow's tasks on a task queue listed in a deployment version only to workers
// of the version that queue routes to (its deployment's current one, or the version a pinned workflow
// is on): a limiter on such a queue waits for those workers, and unversioned pollers get nothing.
import type { Client } from '@temporalio/client';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';

const { PendingWorkflowTaskState, TaskQueueKind, TaskQueueType, VersioningBehavior } = temporal.api.enums.v1;

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
  const lastPolledMs = Math.max(
    0,
    ...(queue.pollers ?? [])
      .filter((p) => sameVersion(p.deploymentOptions, target))
      .map((p) => Number(p.lastAccessTime?.seconds ?? 0) * 1000),
  );
  return {
    status: described.status.name,
    taskQueue: described.taskQueue,
    pendingTask: describePendingTask(
      described.raw.pendingWorkflowTask,
      optionalTsToMs(described.raw.executionConfig?.defaultWorkflowTaskTimeout),
      Date.now(),
    ),
    behavior: pinned ? 'PINNED' : info?.deploymentVersion?.deploymentName ? 'AUTO_UPGRADE' : undefined,
    target,
    lastPolledMs,
  };
}

/** Diagnoses the limiter `workflowId` for a worker that serves the limiter queue `ownQueue`: "(why; remedy)". */
export async function diagnoseLimiter(temporalClient: Client, workflowId: string, ownQueue: string): Promise<string> {
  const route = await describeRoute(temporalClient, workflowId);
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
  if (!target) return `(task queue "${taskQueue}": ${route.pendingTask})`;
  return (
    `(it runs on ${routed}. Once deployment ${target.deploymentName} is gone: temporal worker deployment ` +
    `set-current-version --deployment-name ${target.deploymentName} --unversioned --yes)`
  );
}
