// Static export activities: thin calls of the admin API through callAdminApi (which maps AdminApiError
// to ApplicationFailure once). The bundle keeper also asks generateBundle for fresh links.
import type { Bundle, StaticExportJob } from '../api/types';
import type { StaticExportInput } from '../shared/static-export';
import { callAdminApi } from './api-call';
import type { ActivityDeps } from './deps';

export interface GenerateBundleOptions {
  /** A fresh link for an already exported job (counted as a refresh in metrics). */
  refresh?: boolean;
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
  };
}

export type ExportActivities = ReturnType<typeof createExportActivities>;
