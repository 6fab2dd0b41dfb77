// Static export and bundle keeper activities. Thin: API calls go through callAdminApi (which maps
// AdminApiError to ApplicationFailure once); bundle checks and sinks map their own errors here.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Bundle, StaticExportJob } from '../api/types';
import type { StaticExportInput } from '../shared/static-export';
import { ActivityFailureType } from '../shared/failures';
import { callAdminApi } from './api-call';
import type { ActivityDeps } from './deps';
import { type ApplyBundleRequest, type ApplyBundleResult, SinkError, applyToSink } from './sinks';
import { BundleError, type BundleCheck, downloadAndCheck } from './verify';

export type { ApplyBundleRequest, ApplyBundleResult } from './sinks';
export type { BundleCheck } from './verify';

export interface GenerateBundleOptions {
  /** A fresh link for an already exported job (counted as a refresh in metrics). */
  refresh?: boolean;
}

/** Inside an activity: the cancellation signal and a heartbeat; outside (direct calls): neither. */
function activityContext(): { signal?: AbortSignal; heartbeat: (details: unknown) => void } {
  try {
    const ctx = Context.current();
    return { signal: ctx.cancellationSignal, heartbeat: (details) => ctx.heartbeat(details) };
  } catch {
    return { heartbeat: () => undefined };
  }
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

export function createExportActivities(deps: ActivityDeps) {
  return {
    /** POST /v1/static-export/jobs. A 403 arrives as PlanRequired (non-retryable). */
    async startExport(input: StaticExportInput): Promise<StaticExportJob> {
      return callAdminApi('startExport', (signal) => deps.api.startExport(input, { signal }));
    },

    /** GET /v1/static-export/jobs/{jobId}: one status poll. */
    async getExportStatus(jobId: string): Promise<StaticExportJob> {
      deps.metrics.poll('export');
      return callAdminApi('getExport', (signal) => deps.api.getExport(jobId, { signal }));
    },

    /** POST /v1/static-export/jobs/{jobId}/bundle: a (fresh) presigned link for a completed job. */
    async generateBundle(jobId: string, options: GenerateBundleOptions = {}): Promise<Bundle> {
      const bundle = await callAdminApi('generateBundle', (signal) => deps.api.generateBundle(jobId, { signal }));
      if (options.refresh) deps.metrics.bundleRefresh();
      return bundle;
    },

    /** Downloads the whole bundle and checks status, gzip magic and integrity, and sizeBytes. */
    async verifyBundle(bundle: Bundle): Promise<BundleCheck> {
      const { signal, heartbeat } = activityContext();
      try {
        return await downloadAndCheck(bundle.bundleUrl, {
          expectedBytes: bundle.sizeBytes,
          signal,
          onProgress: (bytes) => heartbeat({ bytes }),
        });
      } catch (err) {
        throw toFailure(err);
      }
    },

    /** Applies a verified bundle through the configured sink (file, webhook, command or mirror). */
    async applyBundle(request: ApplyBundleRequest): Promise<ApplyBundleResult> {
      const { signal, heartbeat } = activityContext();
      try {
        const result = await applyToSink(request, { signal, onProgress: heartbeat });
        deps.metrics.bundleApplied(request.sink.type);
        deps.metrics.linkApplied(request.domain, result.appliedExpiresAt);
        return result;
      } catch (err) {
        throw toFailure(err);
      }
    },
  };
}

export type ExportActivities = ReturnType<typeof createExportActivities>;
