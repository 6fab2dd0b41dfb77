// The bundle keeper's activities: its sink as the worker's sinks file holds it, the download check, and
// the apply. Sinks and bundle checks map their own errors to ApplicationFailure here.
import { log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Bundle } from '../api/types';
import { SINK_REFUSED, type SinkResolution, type SinkType } from '../shared/bundle-keeper';
import { ActivityFailureType, nonRetryable } from '../shared/failures';
import { activitySignal } from './api-call';
import { recordProgress } from './keep-alive';
import type { ActivityDeps } from './deps';
import { type ApplyBundleRequest, type ApplyBundleResult, SinkError, applyToSink } from './sinks';
import { sinkProblem } from './sink-guards';
import { NO_SINKS, type SinkLookup, lookupSink } from './sinks-file';
import { BundleError, type BundleCheck, downloadAndCheck } from './verify';

export type { ApplyBundleRequest, ApplyBundleResult } from './sinks';
export type { BundleCheck } from './verify';

/**
 * A link with less than this left is not applied: the sink's readers need time to fetch it. A link
 * verified in time can still expire before its apply runs (seen when a server node was lost between the
 * two: test/chaos/node-loss.ts); the keeper then asks a fresh link instead.
 */
export const MIN_LINK_LIFE_MS = 1_000;

/** BundleUnavailable (non-retryable: this link will not get younger) for a link at or near its expiry. */
export function refuseExpiringLink(request: ApplyBundleRequest, sinkType: SinkType, nowMs = Date.now()): void {
  if (sinkType === 'mirror') return; // it downloads the bytes itself, and keeps them
  const expiresMs = Date.parse(request.expiresAt);
  if (Number.isFinite(expiresMs) && expiresMs - nowMs < MIN_LINK_LIFE_MS)
    throw nonRetryable(
      ActivityFailureType.bundleUnavailable,
      `bundle link of ${request.jobId} expires at ${request.expiresAt}, before it could be applied: not applied (a fresh link is needed)`,
    );
}

function toFailure(err: unknown): unknown {
  if (err instanceof BundleError) {
    return ApplicationFailure.create({ type: err.code, message: err.message, nonRetryable: !err.retryable });
  }
  if (err instanceof SinkError) {
    return ApplicationFailure.create({
      type: ActivityFailureType.sinkFailed,
      message: err.message,
      nonRetryable: !err.retryable,
    });
  }
  return err;
}

/** What resolveSink asks: the keeper's sink, and whether an inline sink of an earlier release may match. */
export interface ResolveSinkRequest {
  domain: string;
  sink: unknown;
  /** A keeper that ran before named sinks: its inline sink goes on where the file holds an equal one. */
  allowInline: boolean;
}

export function createKeeperActivities(deps: ActivityDeps) {
  const sinks = deps.sinks ?? NO_SINKS;
  /** The sink in the worker's file and usable now, or why not (counted: the alerts watch it). */
  const findSink = async (ref: unknown, allowInline: boolean, domain: string): Promise<SinkLookup> => {
    let found = lookupSink(sinks.current(), ref, allowInline, domain);
    if ('sink' in found) {
      const blocked = await sinkProblem(found.sink);
      if (blocked) found = { refused: `sink "${found.name}": ${blocked.problem}`, code: blocked.code };
    }
    if ('refused' in found) {
      deps.metrics.sinkRefused(found.code);
      log.warn('keeper sink refused', { domain, reason: found.code });
    }
    return found;
  };
  return {
    /**
     * The keeper's sink as the worker's sinks file holds it: its name and type, or why it is refused
     * (a name the file does not hold, an inline sink, a symbolic link or private address in the way).
     */
    async resolveSink(request: ResolveSinkRequest): Promise<SinkResolution> {
      const found = await findSink(request.sink, request.allowInline, request.domain);
      return 'refused' in found ? { refused: found.refused } : { name: found.name, type: found.sink.type };
    },

    /** Downloads the whole bundle from an allowed host, heartbeating, and checks status, gzip and sizeBytes. */
    async verifyBundle(bundle: Bundle): Promise<BundleCheck> {
      try {
        return await downloadAndCheck(bundle.bundleUrl, {
          expectedBytes: bundle.sizeBytes,
          hosts: deps.bundleHosts,
          signal: activitySignal(),
          onProgress: (bytes) => recordProgress({ bytes }),
        });
      } catch (err) {
        throw toFailure(err);
      }
    },

    /** Applies a verified bundle through the configured sink (file, webhook, command or mirror). */
    async applyBundle(request: ApplyBundleRequest): Promise<ApplyBundleResult> {
      // A name, or the inline sink of a keeper of an earlier release (applied only as the file's equal sink).
      const found = await findSink(request.sink, true, request.domain);
      if ('refused' in found || (request.sinkType && request.sinkType !== found.sink.type)) {
        if ('sink' in found) deps.metrics.sinkRefused('changed');
        throw nonRetryable(
          SINK_REFUSED,
          'refused' in found ? found.refused : `sink "${found.name}" changed type in the sinks file`,
        );
      }
      refuseExpiringLink(request, found.sink.type);
      try {
        const result = await applyToSink(found.sink, request, {
          signal: activitySignal(),
          onProgress: recordProgress,
          bundleHosts: deps.bundleHosts,
        });
        deps.metrics.bundleApplied(found.sink.type);
        deps.metrics.linkApplied(request.domain, result.appliedExpiresAt);
        return result;
      } catch (err) {
        throw toFailure(err);
      }
    },
  };
}

export type KeeperActivities = ReturnType<typeof createKeeperActivities>;
