// Publishing's part of the bundleKeeper contract: the keeper's source, the publish signal's argument,
// and what the keeper carries and reports about deployment updates. Plain JSON throughout.
import type { Observation } from './observation';

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

/** A commit the keeper exported (or is about to), with where it came from when known. */
export interface PublishedCommit {
  sha: string;
  ref: string | null;
  message: string | null;
  pullRequest: { number: number; url: string } | null;
  agentWorkflowId: string | null;
  /** Workflow time (ms) of the oldest publish this commit answers. */
  requestedAtMs: number;
}

/** One deployment update the keeper triggered and polls. */
export interface UpdateRound {
  statusId: string;
  /** Workflow time (ms) of the trigger. */
  startedAtMs: number;
  /** Workflow time (ms) of the oldest publish this round answers. */
  requestedAtMs: number;
  /** Commits named by the publishes this round answers (the branch head it builds includes them). */
  coveredShas: string[];
  /** Status polls so far (the first is the trigger), for the polling policy; bounded. */
  observations: Observation[];
  nextPollAtMs: number;
  failedPolls: number;
  sha: string | null;
  status: string;
}

/** What the last finished update said, for the status query and the Web UI. */
export interface UpdateOutcome {
  statusId: string | null;
  status: string;
  sha: string | null;
  endedAtMs: number;
  /** Why it failed (null on success). */
  error: string | null;
}

/** Publishing state of a keeper with a source, carried across continue-as-new. */
export interface PublishingState {
  /** Workflow time (ms) of the oldest publish no update round has taken yet; null: none waiting. */
  wantedSinceMs: number | null;
  /** Commits named by the publishes waiting for the next round. */
  wantedShas: string[];
  round: UpdateRound | null;
  lastUpdate: UpdateOutcome | null;
  /** Workflow time (ms) of the oldest publish not yet applied to the deployment (the alert's metric). */
  pendingSinceMs: number | null;
  /** Delivery ids already taken (bounded, newest last). */
  deliveries: string[];
  /** Commits of finished rounds, asked for or built (bounded, newest last): a publish naming one starts nothing. */
  builtShas: string[];
  /** Merged pull requests by their merge commit (bounded, newest last). */
  pullRequests: { sha: string; number: number; url: string; agentWorkflowId: string | null }[];
  updatesDone: number;
  updatesFailed: number;
}

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
