// staticExport: one export, start to bundle. Start the job, poll it durably (exportPollDelay decides
// when), generate the bundle link, return it. Live state through the `status` query, the Web UI's
// current details and the DocsDomain / DocsJobId / DocsJobStatus search attributes.
//
// Every API call is a local activity, run inside the workflow task that needs it (what that saves:
// docs/design.md, "An export's calls are local activities").
//
// History stays bounded whatever the job's duration (docs/design.md, "Polling and history"): the run
// continues as new when the server suggests it, carrying the job id, the last maxObservationsNeeded
// observations (recentObservations) and the poll count: the policy only looks at those, so nothing it
// needs is lost.
// `maxPollsPerRun` (second argument) forces it sooner; tests use it.
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { ExportActivities } from '../activities/export';
import { EXPORT_TERMINAL_STATUSES, type StaticExportJob } from '../api/types';
import { ACTIVITY_HEARTBEAT_TIMEOUT_MS } from '../shared/heartbeat';
import {
  type ExportStatus,
  type StaticExportCarry,
  type StaticExportInput,
  type StaticExportOptions,
  type StaticExportResult,
  exportStatusQuery,
} from '../shared/static-export';
import { SearchAttr } from '../shared/search-attributes';
import { exportInputProblems, exportOptionsProblems, normalizeExportInput } from '../policies/validation/export';
import {
  ApiFailure,
  WorkflowFailure,
  failureType,
  rootApplicationFailure,
  invalidInput,
  nonRetryable,
} from '../shared/failures';
import { iso, markdownTable } from './details';
import { reservedWorkflowIdProblems } from './reserved-ids';
import { type Observation, exportPollDelay, recentObservations } from '../policies/polling';

/** Details attached to an ExportFailed failure. */
export interface ExportFailedDetails {
  jobId: string;
  domain: string;
  error: string | null;
}

// API calls: short, retried by Temporal with backoff. Non-retryable failures (PlanRequired, NotFound,
// Unauthorized, InvalidRequest) are marked so by callAdminApi and are not retried.
const API_RETRY = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' } as const;
/**
 * The calls, as local activities inside the workflow task that needs them (no activity task round
 * trip; one marker event instead of three activity events and a second workflow task). The start
 * and the bundle are retried as an activity would be (at least once either way). Core honours
 * nextRetryDelay (Retry-After) for local activities too, and a back-off beyond the local retry
 * threshold (1 minute) becomes a durable timer.
 */
const localApi = proxyLocalActivities<ExportActivities>({ startToCloseTimeout: '1 minute', retry: API_RETRY });
/** Start and bundle as activity tasks: the runs that started before LOCAL_CALLS_PATCH keep them. */
const remoteApi = proxyActivities<ExportActivities>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: ACTIVITY_HEARTBEAT_TIMEOUT_MS,
  retry: API_RETRY,
});
const LOCAL_CALLS_PATCH = 'export-calls-local';
/** The proxy for start and bundle: local, unless this run's history has them as activity tasks. */
const callApi = (): typeof localApi => (patched(LOCAL_CALLS_PATCH) ? localApi : remoteApi);

const isTerminal = (status: string | null): boolean =>
  status !== null && (EXPORT_TERMINAL_STATUSES as readonly string[]).includes(status.trim().toLowerCase());

const observe = (job: StaticExportJob, atMs: number): Observation => ({
  atMs,
  status: job.status,
  progress: job.progress,
  pageCount: job.pageCount,
});

/** The live state of one run: the `status` query, the Web UI's current details, the search attributes. */
class ExportRun {
  readonly status: ExportStatus;
  private upsertedStatus: string | null = null;

  constructor(
    readonly domain: string,
    carry: StaticExportCarry | undefined,
  ) {
    const lastSeen = carry?.observations.at(-1);
    this.status = {
      phase: carry ? 'exporting' : 'starting',
      jobId: carry?.jobId ?? null,
      status: lastSeen?.status ?? null,
      progress: lastSeen?.progress ?? 0,
      pageCount: lastSeen?.pageCount ?? 0,
      polls: carry?.polls ?? 0,
      lastPollAt: null,
      nextPollAt: null,
    };
  }

  show(): void {
    const { status } = this;
    setCurrentDetails(
      markdownTable(`Static export · ${this.domain}`, [
        ['phase', status.phase],
        ['job', status.jobId ? `\`${status.jobId}\`` : null],
        ['status', status.status],
        ['progress', `${Math.round(status.progress)} %`],
        ['pages', status.pageCount],
        ['polls', status.polls],
        ['last poll', status.lastPollAt],
        ['next poll', status.nextPollAt],
      ]),
    );
  }

  /** The job as last seen (a start's answer or a poll's). */
  saw({ status, progress, pageCount }: StaticExportJob): void {
    Object.assign(this.status, { status, progress, pageCount });
  }

  setPhase(phase: ExportStatus['phase']): void {
    this.status.phase = phase;
    this.show();
  }

  /** DocsJobId and DocsJobStatus, written when the job's status changes. */
  upsertJob(jobId: string, jobStatus: string): void {
    if (jobStatus === this.upsertedStatus) return;
    upsertSearchAttributes([
      { key: SearchAttr.domain, value: this.domain },
      { key: SearchAttr.jobId, value: jobId },
      { key: SearchAttr.jobStatus, value: jobStatus },
    ]);
    this.upsertedStatus = jobStatus;
  }

  /** A run continued from `carry`: its search attributes are written already unless the job is new to them. */
  resume(jobId: string): void {
    if (workflowInfo().typedSearchAttributes.get(SearchAttr.jobId) !== jobId)
      this.upsertJob(jobId, this.status.status ?? 'unknown');
    else this.upsertedStatus = this.status.status;
  }
}

/** Starts the export job; a 403 for the plan becomes a PlanRequired failure that says what to do. */
async function startJob(run: ExportRun, request: StaticExportInput): Promise<StaticExportJob> {
  const { domain } = run;
  upsertSearchAttributes([{ key: SearchAttr.domain, value: domain }]);
  try {
    return await callApi().startExport.executeWithOptions({ summary: `Start static export of ${domain}` }, [request]);
  } catch (err) {
    run.setPhase('failed');
    if (failureType(err) === ApiFailure.planRequired) {
      throw nonRetryable(
        ApiFailure.planRequired,
        `static export of ${domain} needs an Enterprise plan: the admin API refused to start it (403). ` +
          `Upgrade the plan or enable static export for this project; not retried.`,
        { cause: rootApplicationFailure(err) },
      );
    }
    throw err;
  }
}

/**
 * Polls until the job is terminal, when exportPollDelay says; returns the last job seen (null when the
 * run began terminal), or continues as new when the server suggests it or maxPollsPerRun is reached.
 */
async function pollUntilTerminal(
  run: ExportRun,
  input: StaticExportInput,
  options: StaticExportOptions,
  state: { jobId: string; observations: Observation[]; startedAtMs: number; last: StaticExportJob | null },
): Promise<StaticExportJob | null> {
  const { status, domain } = run;
  const { jobId, startedAtMs } = state;
  let { observations, last } = state;
  let pollsThisRun = 0;
  while (!isTerminal(status.status)) {
    const maxPolls = options.maxPollsPerRun;
    if (workflowInfo().continueAsNewSuggested || (maxPolls !== undefined && pollsThisRun >= maxPolls)) {
      await condition(allHandlersFinished);
      return continueAsNew<typeof staticExport>(input, {
        ...options,
        carry: { jobId, observations: recentObservations(observations), polls: status.polls, startedAtMs },
      });
    }
    const delayMs = exportPollDelay(observations, Date.now());
    status.nextPollAt = iso(Date.now() + delayMs);
    run.show();
    await sleep(delayMs);
    last = await localApi.getExportStatus.executeWithOptions(
      { summary: `Poll ${status.polls + 1} of export ${jobId} (${domain})` },
      [jobId],
    );
    pollsThisRun++;
    observations = recentObservations([...observations, observe(last, Date.now())]);
    run.saw(last);
    Object.assign(status, { polls: status.polls + 1, lastPollAt: iso(Date.now()), nextPollAt: null });
    run.upsertJob(jobId, last.status);
  }
  return last;
}

/** A new run starts the job; a continued one takes its job and observations from the carry. */
async function begin(
  run: ExportRun,
  request: StaticExportInput,
  carry: StaticExportCarry | undefined,
): Promise<{ jobId: string; observations: Observation[]; last: StaticExportJob | null }> {
  if (carry) {
    run.resume(carry.jobId);
    return { jobId: carry.jobId, observations: recentObservations(carry.observations), last: null };
  }
  const last = await startJob(run, request);
  Object.assign(run.status, { phase: 'exporting', jobId: last.jobId });
  run.saw(last);
  run.upsertJob(last.jobId, last.status);
  run.show();
  return { jobId: last.jobId, observations: [observe(last, Date.now())], last };
}

/** A job that ended failed fails the run with ExportFailed, the API's error text in its details. */
function refuseFailedJob(run: ExportRun, jobId: string, last: StaticExportJob | null): void {
  if (run.status.status?.trim().toLowerCase() !== 'failed') return;
  run.setPhase('failed');
  const error = last?.error ?? null;
  const details: ExportFailedDetails = { jobId, domain: run.domain, error };
  throw nonRetryable(
    WorkflowFailure.exportFailed,
    `static export ${jobId} of ${run.domain} failed: ${error ?? 'the API gave no error text'}`,
    { details: [details] },
  );
}

export async function staticExport(
  input: StaticExportInput,
  options: StaticExportOptions = {},
): Promise<StaticExportResult> {
  const problems = [
    ...exportInputProblems(input),
    ...exportOptionsProblems(options, workflowInfo()),
    ...reservedWorkflowIdProblems(),
  ];
  if (problems.length > 0) throw invalidInput('staticExport', problems);
  const request = normalizeExportInput(input);
  const { domain } = request;
  const { carry } = options;
  const run = new ExportRun(domain, carry);
  setHandler(exportStatusQuery, () => run.status);
  run.show();

  const startedAtMs = carry?.startedAtMs ?? Date.now();
  const { jobId, observations, last: started } = await begin(run, request, carry);
  const last = await pollUntilTerminal(run, input, options, { jobId, observations, startedAtMs, last: started });
  refuseFailedJob(run, jobId, last);

  run.setPhase('bundling');
  const bundle = await callApi().generateBundle.executeWithOptions(
    { summary: `Generate bundle link for export ${jobId}` },
    [jobId],
  );
  run.setPhase('done');
  return {
    jobId,
    domain,
    pageCount: run.status.pageCount,
    bundleUrl: bundle.bundleUrl,
    expiresAt: bundle.expiresAt,
    sizeBytes: bundle.sizeBytes,
  };
}
