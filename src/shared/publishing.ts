// Publishing's part of the bundleKeeper contract: the keeper's source, the publish signal's argument,
// and what the keeper carries and reports about deployment updates. Plain JSON throughout.
import { observations } from './observation';
import { count, id, listOf, nullable, record, text, time, type Shaped } from './shapes';

/** Where a keeper's content comes from (the same names as an agent job's `source`). */
export interface KeeperSource {
  /** The admin API project whose deployment branch is built (POST /v1/project/update/{projectId}). */
  projectId: string;
  /** The docs repository's https URL, e.g. https://github.com/acme/docs. */
  repository: string;
  /** The deployment branch, e.g. main. */
  ref: string;
}

/**
 * A keeper with a source keeps it in this memo (normalized: repositoryKey, branchOf), so the webhook
 * receiver finds the keepers of a repository and branch by listing running keepers.
 */
export const KEEPER_SOURCE_MEMO = 'docsSource';
export interface KeeperSourceMemo {
  repository: string;
  ref: string;
  projectId: string;
}

/**
 * The publish signal's optional argument (the webhook receiver sends it; `docs-admin publish` sends
 * none). Untrusted: the keeper checks every field (src/policies/validation/publish.ts) and ignores a
 * request for another repository or branch.
 */
export interface PublishRequest {
  repository?: string;
  ref?: string;
  /** The pushed (or merge) commit. */
  sha?: string;
  /** X-GitHub-Delivery: a redelivery changes nothing. */
  deliveryId?: string;
  /** The merged pull request this push came from. */
  pullRequest?: { number: number; url: string };
  /** The agentJob workflow that opened that pull request (found by DocsPrLink). */
  agentWorkflowId?: string;
}

const nullableText = nullable(text);

/** A commit the keeper exported (or is about to), with where it came from when known. */
export const publishedCommit = record({
  sha: text,
  ref: nullableText,
  message: nullableText,
  pullRequest: nullable(record({ number: count, url: text })),
  agentWorkflowId: nullableText,
  /** Workflow time (ms) of the oldest publish this commit answers. */
  requestedAtMs: time,
});
export type PublishedCommit = Shaped<typeof publishedCommit>;

/** One deployment update the keeper triggered and polls. */
const updateRound = record({
  statusId: id,
  /** Workflow time (ms) of the trigger. */
  startedAtMs: time,
  /** Workflow time (ms) of the oldest publish this round answers. */
  requestedAtMs: time,
  /** Commits named by the publishes this round answers (the branch head it builds includes them). */
  coveredShas: listOf(text),
  /** Status polls so far (the first is the trigger), for the polling policy; bounded. */
  observations,
  nextPollAtMs: time,
  failedPolls: count,
  sha: nullableText,
  status: text,
});
export type UpdateRound = Shaped<typeof updateRound>;

/** What the last finished update said, for the status query and the Web UI. */
const updateOutcome = record({
  statusId: nullableText,
  status: text,
  sha: nullableText,
  endedAtMs: time,
  /** Why it failed (null on success). */
  error: nullableText,
});
export type UpdateOutcome = Shaped<typeof updateOutcome>;

/** Publishing state of a keeper with a source, carried across continue-as-new. */
export const publishingState = record({
  /** Workflow time (ms) of the oldest publish no update round has taken yet; null: none waiting. */
  wantedSinceMs: nullable(time),
  /** Commits named by the publishes waiting for the next round. */
  wantedShas: listOf(text),
  round: nullable(updateRound),
  lastUpdate: nullable(updateOutcome),
  /** Workflow time (ms) of the oldest publish not yet applied to the deployment (the alert's metric). */
  pendingSinceMs: nullable(time),
  /** Delivery ids already taken (bounded, newest last). */
  deliveries: listOf(text),
  /** Commits of finished rounds, asked for or built (bounded, newest last): a publish naming one starts nothing. */
  builtShas: listOf(text),
  /** Merged pull requests by their merge commit (bounded, newest last). */
  pullRequests: listOf(record({ sha: text, number: count, url: text, agentWorkflowId: nullableText })),
  updatesDone: count,
  updatesFailed: count,
});
export type PublishingState = Shaped<typeof publishingState>;

/** The keeper's status fields about publishing (present when it has a source). */
export interface PublishingStatus {
  source: KeeperSource;
  /** The commit the applied bundle renders, and the merged PR and agent job it came from. */
  commit: PublishedCommit | null;
  /** The update being waited for, else the last one. */
  update: { statusId: string | null; status: string; sha: string | null; error: string | null } | null;
  /** A publish arrived that no update has taken yet. */
  publishWanted: boolean;
  updatesDone: number;
  updatesFailed: number;
}
