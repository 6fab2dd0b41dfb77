// bundleKeeper from the client: ensure the domain's keeper runs, tell it about a publish, read its status.
import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { taskQueueOf } from '../connection/settings';
import { domainProblems } from '../policies/validation/export';
import { keeperInputProblems } from '../policies/validation/keeper';
import { SearchAttr } from '../shared/search-attributes';
import { WorkflowType } from '../shared/workflow-types';
import {
  keeperStatusQuery,
  keeperWorkflowId,
  publishSignal,
  type BundleKeeperInput,
  type KeeperStatus,
} from '../shared/bundle-keeper';
import { checkInput } from './errors';
import { markdownList, type BundleKeeperWorkflow, type StartOptions } from './start';

export { keeperInputProblems } from '../policies/validation/keeper';

/**
 * Starts the domain's bundleKeeper, or returns the running one (one keeper per domain: the workflow
 * id is keeperWorkflowId(domain) and an existing run is kept, whatever input this call carries).
 */
export async function ensureKeeper(
  client: Client,
  input: BundleKeeperInput,
  options: Omit<StartOptions, 'requestId'> = {},
): Promise<WorkflowHandle<BundleKeeperWorkflow>> {
  checkInput(keeperInputProblems(input));
  const { source } = input;
  return client.workflow.start<BundleKeeperWorkflow>(WorkflowType.bundleKeeper, {
    workflowId: keeperWorkflowId(input.domain),
    taskQueue: taskQueueOf(options.taskQueue),
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    staticSummary: `Bundle keeper for ${input.domain} (${input.kind ?? 'client-hosted'}, sink ${input.sink})`,
    staticDetails: markdownList([
      ['domain', input.domain],
      ['kind', input.kind ?? 'client-hosted'],
      ['sink', `${input.sink} (of the worker's sinks file)`],
      ['version', input.version ?? 'latest published'],
      ['source', source && `${source.repository} @ ${source.ref} (project ${source.projectId})`],
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
  checkInput(domainProblems(domain));
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
    throw new Error(`no bundle keeper is running for ${domain} (start one with: keep --domain ${domain} ...)`, {
      cause: err,
    });
  }
}

export async function keeperStatus(client: Client, domain: string): Promise<KeeperStatus> {
  return client.workflow.getHandle(keeperWorkflowId(domain)).query(keeperStatusQuery);
}
