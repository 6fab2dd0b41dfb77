// The bundle keeper's publishing rounds (keepers with a `source`): step 2 of docs/design.md, "The publish
// loop" (what a round triggers, polls and hands to the keeper, which publishes start one, what a failed
// update leaves). A publish naming a commit a round holds or built starts none whatever its delivery id
// (a signed push replayed under new delivery ids); a redelivery (same delivery id) changes nothing. All
// state is PublishingState (plain JSON, carried by the keeper).
import { log, patched } from '@temporalio/workflow';
import { type DeploymentUpdate, UPDATE_TERMINAL_STATUSES } from '../api/types';
import { ApiFailure, failureMessage, failureType } from '../shared/failures';
import type {
  KeeperSource,
  PublishRequest,
  PublishedCommit,
  PublishingState,
  PublishingStatus,
  UpdateRound,
} from '../shared/publishing';
import { readPublishRequest } from '../policies/validation/publish';
import { retryDelayMs } from '../policies/keeper-schedule';
import { updatePollDelay } from '../policies/polling';
import { api } from './keeper-calls';

/** Bounds of the carried lists (JSON carried across continue-as-new stays small). */
const MAX_DELIVERIES = 100;
const MAX_PULL_REQUESTS = 20;
const MAX_SHAS = 20;
/** Commits of finished rounds remembered: a replayed push of one of the last this many builds starts nothing. */
const MAX_BUILT_SHAS = 100;
const MAX_OBSERVATIONS = 8;
/** An update not finished after this long is given up (the next publish tries again). */
const UPDATE_GIVE_UP_MS = 60 * 60_000;
/**
 * A publish naming a commit of a finished round is ignored. Runs whose history accepted such a publish
 * (and triggered an update for it) replay that, and take the check from their next such publish on.
 */
const BUILT_ONCE_PATCH = 'publish-built-commit-once';

export function initialPublishing(): PublishingState {
  return {
    wantedSinceMs: null,
    wantedShas: [],
    round: null,
    lastUpdate: null,
    pendingSinceMs: null,
    deliveries: [],
    pullRequests: [],
    builtShas: [],
    updatesDone: 0,
    updatesFailed: 0,
  };
}

const pushBounded = <T>(list: T[], item: T, max: number): void => {
  list.push(item);
  if (list.length > max) list.splice(0, list.length - max);
};

/** What one step of the publishing loop did. */
export type PublishStep =
  { step: 'idle' } | { step: 'triggered' } | { step: 'polled' } | { step: 'built'; commit: PublishedCommit };

export class Publisher {
  /** Commits of the round whose trigger call is in flight (runtime: an activity ends before any continue-as-new). */
  private triggering: string[] = [];

  constructor(
    readonly domain: string,
    readonly source: KeeperSource,
    readonly ps: PublishingState,
  ) {}

  /** For the metric: the oldest publish not applied yet (reported by every trigger and poll). */
  private wait(fallbackMs: number) {
    return { domain: this.domain, sinceMs: this.ps.pendingSinceMs ?? fallbackMs };
  }

  /**
   * A publish signal. True when it asks for a round (the keeper wakes up); false when it is a
   * redelivery, not for this source, or names a commit already built or being built: waiting for a
   * round, in one, built by one that finished (successful or not), exported, pending or applied.
   * `held`: the shas the keeper's exports (owed or running) and its bundles already hold.
   */
  accept(raw: unknown, nowMs: number, held: (string | null | undefined)[]): boolean {
    const { ps } = this;
    const read = readPublishRequest(raw, this.source);
    if ('ignored' in read) {
      log.warn('publish ignored', { reason: read.ignored });
      return false;
    }
    const request: PublishRequest = read.request;
    if (request.deliveryId !== undefined) {
      if (ps.deliveries.includes(request.deliveryId)) return false;
      pushBounded(ps.deliveries, request.deliveryId, MAX_DELIVERIES);
    }
    if (request.sha && request.pullRequest) {
      const known = ps.pullRequests.find((p) => p.number === request.pullRequest!.number);
      if (!known)
        pushBounded(
          ps.pullRequests,
          { sha: request.sha, ...request.pullRequest, agentWorkflowId: request.agentWorkflowId ?? null },
          MAX_PULL_REQUESTS,
        );
    }
    const sha = request.sha;
    if (sha) {
      const building = ps.round ? [...ps.round.coveredShas, ps.round.sha] : this.triggering;
      if ([...building, ...ps.wantedShas, ...held].includes(sha)) return false;
      if (ps.builtShas.includes(sha) && patched(BUILT_ONCE_PATCH)) {
        log.info('publish ignored: an earlier update built this commit', { sha });
        return false;
      }
      pushBounded(ps.wantedShas, sha, MAX_SHAS);
    }
    ps.wantedSinceMs ??= nowMs;
    ps.pendingSinceMs ??= nowMs;
    return true;
  }

  /** When the next poll or trigger is due (null: nothing to do until a publish). */
  dueAtMs(): number | null {
    return this.ps.round ? this.ps.round.nextPollAtMs : this.ps.wantedSinceMs;
  }

  /** Triggers or polls when due: what it did (`built`: an update published this commit; the keeper exports it). */
  async step(nowMs: number): Promise<PublishStep> {
    const { ps } = this;
    if (ps.round && ps.round.nextPollAtMs <= nowMs) return this.poll(ps.round, nowMs);
    if (ps.round || ps.wantedSinceMs === null) return { step: 'idle' };
    await this.trigger(ps.wantedSinceMs);
    return { step: 'triggered' };
  }

  private async trigger(requestedAtMs: number): Promise<void> {
    const { ps } = this;
    const coveredShas = ps.wantedShas;
    ps.wantedSinceMs = null;
    ps.wantedShas = [];
    this.triggering = coveredShas;
    try {
      const { statusId } = await api.triggerUpdate.executeWithOptions(
        { summary: `Update the deployment of ${this.source.projectId} (build ${this.source.ref})` },
        [this.source.projectId, this.wait(requestedAtMs)],
      );
      const at = Date.now();
      const observations = [{ atMs: at, status: 'queued' }];
      ps.round = {
        statusId,
        startedAtMs: at,
        requestedAtMs,
        coveredShas,
        observations,
        nextPollAtMs: at + updatePollDelay(observations, at),
        failedPolls: 0,
        sha: null,
        status: 'queued',
      };
    } catch (err) {
      this.fail(null, null, `update not triggered: ${failureMessage(err)}`);
    } finally {
      this.triggering = [];
    }
  }

  private async poll(round: UpdateRound, nowMs: number): Promise<PublishStep> {
    try {
      const update = await api.getUpdateStatus.executeWithOptions(
        { summary: `Poll deployment update ${round.statusId}` },
        [round.statusId, this.wait(round.requestedAtMs)],
      );
      return this.observe(round, update, Date.now());
    } catch (err) {
      if (failureType(err) === ApiFailure.notFound) {
        this.fail(round.statusId, round.sha, `update ${round.statusId} is gone: ${failureMessage(err)}`);
      } else {
        round.failedPolls++;
        round.nextPollAtMs = nowMs + retryDelayMs(round.failedPolls);
      }
      return { step: 'polled' };
    }
  }

  /** What a poll said: built (the commit to export), ended otherwise, given up, or the next poll planned. */
  private observe(round: UpdateRound, update: DeploymentUpdate, at: number): PublishStep {
    round.status = update.status;
    round.sha = update.commit?.sha ?? round.sha;
    round.failedPolls = 0;
    pushBounded(round.observations, { atMs: at, status: update.status }, MAX_OBSERVATIONS);
    if (update.status === 'success') return this.succeeded(round, update, at);
    if ((UPDATE_TERMINAL_STATUSES as readonly string[]).includes(update.status)) {
      const tail = update.logs.slice(-2).join(' / ').slice(0, 300);
      this.fail(round.statusId, round.sha, `update ${round.statusId} ended ${update.status}: ${tail}`);
    } else if (at - round.startedAtMs > UPDATE_GIVE_UP_MS) {
      this.fail(round.statusId, round.sha, `update ${round.statusId} still ${update.status} after an hour`);
    } else {
      // observations[0] is the trigger: the delay grows with the time since it.
      round.nextPollAtMs = at + updatePollDelay(round.observations, at);
    }
    return { step: 'polled' };
  }

  private succeeded(round: UpdateRound, update: DeploymentUpdate, at: number): PublishStep {
    const { ps } = this;
    this.remember(round);
    const commit = this.published(update.commit?.sha ?? null, update.commit?.ref, update.commit?.message);
    ps.lastUpdate = { statusId: round.statusId, status: 'success', sha: round.sha, endedAtMs: at, error: null };
    ps.updatesDone++;
    ps.round = null;
    if (commit) return { step: 'built', commit };
    this.fail(round.statusId, null, 'update succeeded without naming its commit');
    return { step: 'polled' };
  }

  /** The commit a successful update built, with the merged pull request it came from when known. */
  private published(sha: string | null, ref?: string | null, message?: string | null): PublishedCommit | null {
    if (!sha) return null;
    const pr = this.ps.pullRequests.find((p) => p.sha === sha);
    return {
      sha,
      ref: ref ?? this.source.ref,
      message: message ?? null,
      pullRequest: pr ? { number: pr.number, url: pr.url } : null,
      agentWorkflowId: pr?.agentWorkflowId ?? null,
      requestedAtMs: this.ps.round?.requestedAtMs ?? Date.now(),
    };
  }

  /** A round's commits, as it ends: what it was asked to build and what it built. */
  private remember(round: UpdateRound): void {
    const { builtShas } = this.ps;
    for (const sha of [...round.coveredShas, round.sha])
      if (sha && !builtShas.includes(sha)) pushBounded(builtShas, sha, MAX_BUILT_SHAS);
  }

  private fail(statusId: string | null, sha: string | null, error: string): void {
    const { ps } = this;
    // A round the platform took (not a trigger that failed): its commits were built, if not well.
    if (ps.round) this.remember(ps.round);
    ps.lastUpdate = { statusId, status: 'failure', sha, endedAtMs: Date.now(), error };
    ps.updatesFailed++;
    ps.round = null;
    log.warn('deployment update failed; the live link stays', { projectId: this.source.projectId, error });
  }

  /**
   * `commit` is applied to the deployment: the publishes it answers have arrived; the metric now shows
   * the oldest publish still on its way (`owed`: built and owed an export; building or waiting), or none.
   */
  async applied(commit: PublishedCommit, owed: PublishedCommit | null): Promise<void> {
    const { ps } = this;
    const still = [owed?.requestedAtMs, ps.round?.requestedAtMs, ps.wantedSinceMs].filter(
      (t): t is number => typeof t === 'number',
    );
    ps.pendingSinceMs = still.length > 0 ? Math.min(...still) : null;
    try {
      await api.publishApplied.executeWithOptions(
        { summary: `Publish of ${commit.sha.slice(0, 12)} reached the deployment` },
        [this.domain, commit.requestedAtMs, ps.pendingSinceMs],
      );
    } catch (err) {
      log.warn('publish metric not reported', { error: failureMessage(err) });
    }
  }

  /** A commit with the merged pull request it came from (the PR event may come after the export). */
  withPullRequest(commit: PublishedCommit | null | undefined): PublishedCommit | null {
    if (!commit) return null;
    if (commit.pullRequest) return commit;
    const pr = this.ps.pullRequests.find((p) => p.sha === commit.sha);
    return pr
      ? { ...commit, pullRequest: { number: pr.number, url: pr.url }, agentWorkflowId: pr.agentWorkflowId }
      : commit;
  }

  status(applied: PublishedCommit | null | undefined): PublishingStatus {
    const { ps } = this;
    const round = ps.round;
    const last = ps.lastUpdate;
    return {
      source: this.source,
      commit: this.withPullRequest(applied),
      update: round
        ? { statusId: round.statusId, status: round.status, sha: round.sha, error: null }
        : last
          ? { statusId: last.statusId, status: last.status, sha: last.sha, error: last.error }
          : null,
      publishWanted: ps.wantedSinceMs !== null,
      updatesDone: ps.updatesDone,
      updatesFailed: ps.updatesFailed,
    };
  }
}
