// Where a webhook's publish goes, looked up in Temporal's visibility: the running keepers whose source
// memo (KEEPER_SOURCE_MEMO, set by the keeper itself) names the repository and branch, and the agentJob
// that opened a merged pull request (its DocsPrLink search attribute). One small list per delivery: a
// deployment has a keeper per domain, not thousands.
import type { Client } from '@temporalio/client';
import { KEEPER_SOURCE_MEMO, type KeeperSourceMemo } from '../shared/publishing';
import { SearchAttr } from '../shared/search-attributes';
import { WorkflowType } from '../shared/workflow-types';

export interface KeeperRef {
  workflowId: string;
  runId: string;
}

/** Running keepers of `repository` (a repositoryKey) and `branch`. */
export async function keepersOf(client: Client, repository: string, branch: string): Promise<KeeperRef[]> {
  const query = `WorkflowType = '${WorkflowType.bundleKeeper}' AND ExecutionStatus = 'Running'`;
  const found: KeeperRef[] = [];
  for await (const execution of client.workflow.list({ query })) {
    const source = execution.memo?.[KEEPER_SOURCE_MEMO] as Partial<KeeperSourceMemo> | undefined;
    if (source?.repository === repository && source.ref === branch)
      found.push({ workflowId: execution.workflowId, runId: execution.runId });
  }
  return found;
}

/**
 * keepersOf with a short memory: deliveries of one burst (GitHub sends a push and a pull_request per
 * merge, a busy branch many pushes) share one visibility list, in flight or a moment old.
 */
export class KeeperDirectory {
  readonly #lists = new Map<string, { atMs: number; keepers: Promise<KeeperRef[]> }>();

  constructor(
    private readonly client: Client,
    private readonly ttlMs = 2_000,
  ) {}

  keepersOf(repository: string, branch: string): Promise<KeeperRef[]> {
    const key = `${repository} ${branch}`;
    const now = Date.now();
    const hit = this.#lists.get(key);
    if (hit && now - hit.atMs < this.ttlMs) return hit.keepers;
    for (const [k, v] of this.#lists) if (now - v.atMs >= this.ttlMs) this.#lists.delete(k);
    const keepers = keepersOf(this.client, repository, branch);
    this.#lists.set(key, { atMs: now, keepers });
    keepers.catch(() => this.#lists.delete(key));
    return keepers;
  }
}

/** A pull request page URL as the agent job recorded it: safe inside a visibility query string. */
const PR_URL = /^https:\/\/[A-Za-z0-9.-]+\/[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+\/pull\/\d+$/;

/** The agentJob workflow whose pull request this is, or null (a person's pull request). */
export async function agentJobOf(client: Client, prUrl: string): Promise<string | null> {
  if (!PR_URL.test(prUrl)) return null;
  const query = `WorkflowType = '${WorkflowType.agentJob}' AND ${SearchAttr.prLink.name} = '${prUrl}'`;
  for await (const execution of client.workflow.list({ query })) return execution.workflowId;
  return null;
}
