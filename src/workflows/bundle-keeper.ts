// bundleKeeper: one long-lived workflow per domain (id keeperWorkflowId(domain); start it with
// workflowIdConflictPolicy USE_EXISTING so a second start attaches) that keeps a deployment's config
// pointing at a valid, verified bundle.
//
//   export   a `staticExport` child workflow (at start, on `publish`, on `pin`); publishes that arrive
//            while one runs coalesce into a single follow-up export.
//   install  verify the bundle (full streamed download: size, gzip magic and integrity), then apply it
//            through the sink. A bundle that fails is never applied: the previous config stays live and
//            the keeper retries with back-off (fresh link each time).
//   refresh  before the applied link expires (keeper-schedule.ts: 10 % of its lifetime, at least a
//            minute, configurable) generate a fresh link for the same job, verify, apply. A failed
//            refresh is retried with a back-off capped at a quarter of the time the live link has left.
//            The mirror sink's stable URL does not expire, so nothing is refreshed there.
//   sink     the input names a sink of the worker's sinks file; the resolveSink activity answers its
//            type, or why it is refused (an unknown name, an inline sink object, a symbolic link or a
//            private address in the way). Refused, the keeper applies nothing and exports nothing: it says
//            why in its status and details, and checks again with back-off until the file holds it.
//            Keepers of earlier releases carried an inline sink: they go on where the file holds an equal
//            one (runs that started before this change keep their commands: patched KEEPER_NAMED_SINKS).
//   publish  with a `source`, a publish first has the platform build the branch (a deployment update,
//            src/workflows/publishing.ts) and exports the commit it built once it succeeded.
//   pause    stops exports, installs and refreshes (the deployment is left alone; the live link can
//            expire while paused); publishes are remembered; `resume` catches up at once.
//
// History (what a refresh cycle costs: docs/design.md, "Polling and history"): the keeper continues as
// new when the server suggests it (workflowInfo().continueAsNewSuggested), never while an export child
// runs, carrying BundleKeeperCarry (plain JSON), which only a continued run may hold
// (src/policies/validation/carry.ts). `continueAsNewAfterCycles` forces it sooner (tests).
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  executeChild,
  log,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { ExportActivities } from '../activities/export';
import type { Bundle } from '../api/types';
import { ACTIVITY_HEARTBEAT_TIMEOUT_MS } from '../shared/heartbeat';
import {
  type AppliedBundle,
  type BundleKeeperInput,
  type BundleKeeperCarry,
  type KeeperStatus,
  SINK_REFUSED,
  type SinkType,
  keeperStatusQuery,
  pauseSignal,
  pinVersionSignal,
  publishSignal,
  resumeSignal,
} from '../shared/bundle-keeper';
import { KEEPER_SOURCE_MEMO, type KeeperSourceMemo, type PublishedCommit } from '../shared/publishing';
import { SearchAttr } from '../shared/search-attributes';
import { type StaticExportResult, exportWorkflowId } from '../shared/static-export';
import { checkKeeperInput } from '../policies/validation/keeper';
import { carriedStateProblems, keeperCarryProblems } from '../policies/validation/carry';
import { deploymentProblems } from '../policies/validation/deployment';
import { ApiFailure, WorkflowFailure, failureMessage, failureType } from '../shared/failures';
import { iso, linkForDisplay, markdownTable } from './details';
import { refreshAtMs, retryDelayMs } from '../policies/keeper-schedule';
import { staticExport } from './static-export';
import { Publisher, initialPublishing } from './publishing';
import { reservedWorkflowIdProblems } from './reserved-ids';
import { branchOf, repositoryKey } from '../policies/validation/publish';

/** Failures after which the keeper cannot do anything useful: it fails instead of retrying forever. */
const FATAL_EXPORT_FAILURES = new Set<string>([ApiFailure.planRequired, WorkflowFailure.invalidInput]);

/** Runs that started before named sinks apply their inline sink without resolving it first. */
const KEEPER_NAMED_SINKS = 'keeper-named-sinks';

/** Back-off between checks of a refused sink: the operator is editing the sinks file. */
const SINK_BACKOFF = { baseMs: 10_000, maxMs: 5 * 60_000 };

/** Back-off between failed exports (a failed export is a whole re-render: slower than link retries). */
const EXPORT_BACKOFF = { baseMs: 60_000, maxMs: 60 * 60_000 };

const api = proxyActivities<ExportActivities>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: ACTIVITY_HEARTBEAT_TIMEOUT_MS,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5 },
});
// Downloads the whole archive: long, heartbeating (its progress, and a keep-alive through silences, so
// a task lost on its way to the worker is retried after the heartbeat timeout, not after 15 minutes).
// Content problems are non-retryable (BundleInvalid).
const verifier = proxyActivities<ExportActivities>({
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: ACTIVITY_HEARTBEAT_TIMEOUT_MS,
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 3 },
});
// A sink may run `helm upgrade` (minutes, silent: the attempt keeps itself alive) or copy the archive (mirror).
const applier = proxyActivities<ExportActivities>({
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: ACTIVITY_HEARTBEAT_TIMEOUT_MS,
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 3 },
});

function initialState(input: BundleKeeperInput): BundleKeeperCarry {
  return {
    current: null,
    pending: null,
    version: input.version ?? null,
    exportsDone: 0,
    refreshesDone: 0,
    exportWanted: true,
    paused: false,
    exportFailures: 0,
    exportRetryAtMs: null,
    lastError: null,
    generation: 0,
  };
}

function validate(input: BundleKeeperInput): void {
  const { problems, conflicts } = checkKeeperInput(input, { sink: 'worker' });
  problems.push(...reservedWorkflowIdProblems());
  // Only the keeper's own past: a carry says which sink is resolved and which bundle to apply next.
  if (typeof input === 'object' && input !== null)
    problems.push(
      ...carriedStateProblems(workflowInfo(), { carry: input.carry, carried: input.carried }, keeperCarryProblems),
    );
  if (problems.length > 0) {
    throw ApplicationFailure.create({
      type: WorkflowFailure.invalidInput,
      message: `invalid bundleKeeper input: ${problems.join('; ')}`,
      nonRetryable: true,
    });
  }
  throwConflicts(input.domain, conflicts);
}

function throwConflicts(domain: string, conflicts: string[]): void {
  if (conflicts.length > 0) {
    throw ApplicationFailure.create({
      type: WorkflowFailure.deploymentKindConflict,
      message: `deployment kind conflict for ${domain}: ${conflicts.join('; ')}`,
      nonRetryable: true,
    });
  }
}

/** How the Web UI shows a sink reference the worker has not resolved (never an inline sink's address). */
function sinkLabel(ref: unknown): string {
  if (typeof ref === 'string') return `"${ref.slice(0, 64)}"`;
  const type = typeof ref === 'object' && ref !== null ? (ref as { type?: unknown }).type : undefined;
  return typeof type === 'string' ? `an inline ${type.slice(0, 16)} sink` : 'an inline sink';
}

type ExportOutcome = { ok: StaticExportResult } | { err: unknown };

/** A retry or refresh time that has come (or none set). */
const due = (atMs: number | null | undefined) => atMs === null || atMs === undefined || atMs <= Date.now();

/**
 * One keeper run: the carried state (`st`), what lives only in this run (the export child, wake-ups),
 * and the operations of the lifecycle. The workflow function below is the loop that picks the next one.
 */
class Keeper {
  readonly st: BundleKeeperCarry;
  readonly domain: string;
  /** The sink as the input gives it: a name (or, from an earlier release, an inline sink). */
  readonly sinkRef: unknown;
  /** This run resolves its sink through the worker (false: a run that started before named sinks). */
  readonly named: boolean;
  // Runtime-only state: never carried (the keeper does not continue as new while an export runs).
  exporting = false;
  exportOutcome: ExportOutcome | null = null;
  wake = 0;
  cyclesThisRun = 0;
  /** Keepers with a source: their publishing rounds; the commit the running export renders. */
  readonly pub: Publisher | null;
  private exportCommit: PublishedCommit | null = null;
  private upsertedJobId: string | null = null;

  constructor(readonly input: BundleKeeperInput) {
    this.domain = input.domain;
    this.sinkRef = input.sink;
    // `carried`: the same carry, as runs continued by earlier releases wrote it.
    const carry = input.carry ?? input.carried;
    this.st = carry ? { ...carry } : initialState(input);
    this.named = patched(KEEPER_NAMED_SINKS);
    this.pub = input.source
      ? new Publisher(input.domain, input.source, (this.st.publishing ??= initialPublishing()))
      : null;
  }

  /** The sink's type as far as the keeper knows it. */
  private sinkType(): SinkType | undefined {
    if (this.named) return this.st.sinkResolved?.type;
    return (this.sinkRef as { type: SinkType }).type;
  }

  /** A named run whose sink the worker has not (or no longer) accepted: nothing is exported or applied. */
  sinkBlocked(): boolean {
    return this.named && !this.st.sinkResolved;
  }

  /** Asks the worker for the sink; refused, waits (with back-off) and asks again. */
  async resolveSink(): Promise<void> {
    const { st, input } = this;
    // Only a keeper that continued from an earlier run (its carry passed validate()) may go on with an
    // inline sink equal to one of the file.
    const allowInline = input.carry !== undefined || input.carried !== undefined;
    const answer = await api.resolveSink.executeWithOptions({ summary: `Resolve sink ${sinkLabel(this.sinkRef)}` }, [
      { domain: this.domain, sink: this.sinkRef, allowInline },
    ]);
    if ('refused' in answer) {
      const checks = (st.sinkRefused?.checks ?? 0) + 1;
      st.sinkRefused = {
        reason: answer.refused,
        checks,
        retryAtMs: Date.now() + retryDelayMs(checks, undefined, SINK_BACKOFF),
      };
      log.warn("the worker refused the keeper's sink; nothing is applied until its sinks file holds it", {
        domain: this.domain,
        checks,
      });
      return;
    }
    throwConflicts(
      this.domain,
      deploymentProblems({ kind: input.kind, features: input.features, sinkType: answer.type }),
    );
    st.sinkResolved = answer;
    st.sinkRefused = null;
  }

  /**
   * An apply the worker refused (the file changed): a named run asks for the sink again before anything
   * else; a run that started before named sinks only shows it (its install retries keep their back-off
   * and commands). Cleared by the next apply that passes.
   */
  private noteRefusedApply(err: unknown): void {
    if (failureType(err) !== SINK_REFUSED) return;
    const checks = (this.st.sinkRefused?.checks ?? 0) + 1;
    this.st.sinkRefused = { reason: failureMessage(err), checks, retryAtMs: Date.now() };
    if (this.named) this.st.sinkResolved = null;
  }

  status(): KeeperStatus {
    const { st } = this;
    return {
      jobId: st.current?.jobId ?? null,
      bundleUrl: st.current?.appliedUrl ?? null,
      expiresAt: st.current?.appliedExpiresAt ?? null,
      version: st.version,
      lastAppliedAt: st.current?.appliedAt ?? null,
      nextRefreshAt: st.current?.refreshAtMs ? iso(st.current.refreshAtMs) : null,
      exportsDone: st.exportsDone,
      refreshesDone: st.refreshesDone,
      paused: st.paused,
      lastError: st.lastError,
      exporting: this.exporting,
      exportWanted: st.exportWanted,
      sinkRefused: st.sinkRefused?.reason ?? null,
      ...(this.pub ? { publishing: this.pub.status(st.current?.commit) } : {}),
    };
  }

  /** The status query and the publish / pin / pause / resume signals. */
  registerHandlers(): void {
    const { st } = this;
    setHandler(keeperStatusQuery, () => this.status());
    setHandler(publishSignal, (request) => {
      if (this.pub) {
        const held = [this.exportCommit?.sha, st.pending?.commit?.sha, st.current?.commit?.sha];
        if (this.pub.accept(request, Date.now(), held)) this.wake++;
        return;
      }
      st.exportWanted = true;
      st.exportRetryAtMs = null; // new content: try now, whatever the back-off said
      this.wake++;
    });
    setHandler(pinVersionSignal, (version) => {
      st.version = typeof version === 'string' && version.trim() !== '' ? version : null;
      st.exportWanted = true;
      st.exportRetryAtMs = null;
      this.wake++;
    });
    setHandler(pauseSignal, () => {
      st.paused = true;
      this.wake++;
    });
    setHandler(resumeSignal, () => {
      st.paused = false;
      this.wake++;
    });
  }

  /** DocsDomain when this run does not have it yet; DocsJobId as the applied job changes (upsertJob). */
  initSearchAttributes(): void {
    this.upsertedJobId = workflowInfo().typedSearchAttributes.get(SearchAttr.jobId) ?? null;
    if (workflowInfo().typedSearchAttributes.get(SearchAttr.domain) !== this.domain) {
      upsertSearchAttributes([{ key: SearchAttr.domain, value: this.domain }]);
    }
    // The webhook receiver finds the keepers of a repository and branch by this memo (listing running
    // keepers); a memo, not a search attribute, so no server needs a new registration.
    const source = this.input.source;
    if (source) {
      const memo: KeeperSourceMemo = {
        repository: repositoryKey(source.repository) ?? '',
        ref: branchOf(source.ref) ?? '',
        projectId: source.projectId,
      };
      const had = workflowInfo().memo?.[KEEPER_SOURCE_MEMO] as KeeperSourceMemo | undefined;
      if (had?.repository !== memo.repository || had?.ref !== memo.ref || had?.projectId !== memo.projectId)
        upsertMemo({ [KEEPER_SOURCE_MEMO]: memo });
    }
  }

  private upsertJob(jobId: string): void {
    if (jobId === this.upsertedJobId) return;
    upsertSearchAttributes([{ key: SearchAttr.jobId, value: jobId }]);
    this.upsertedJobId = jobId;
  }

  show(): void {
    const { st } = this;
    const s = this.status();
    const resolved = st.sinkResolved;
    const state = st.paused
      ? 'paused'
      : this.sinkBlocked()
        ? st.sinkRefused
          ? 'waiting: sink refused'
          : 'checking its sink'
        : this.exporting
          ? 'exporting'
          : st.pending
            ? 'installing a new bundle'
            : st.current
              ? 'keeping'
              : 'starting';
    setCurrentDetails(
      markdownTable(`Bundle keeper · ${this.domain}`, [
        ['state', state],
        [
          'sink',
          resolved ? `${resolved.name} (${resolved.type})` : this.named ? sinkLabel(this.sinkRef) : this.sinkType(),
        ],
        ['sink refused', st.sinkRefused ? `${st.sinkRefused.reason} (checked ${st.sinkRefused.checks}x)` : null],
        ['kind', this.input.kind ?? 'client-hosted'],
        ['job', s.jobId ? `\`${s.jobId}\`` : null],
        ['applied link', linkForDisplay(s.bundleUrl)],
        ['link expires', s.expiresAt ?? (st.current ? 'never (mirrored)' : null)],
        ['version', st.version ?? 'latest'],
        ['last applied', s.lastAppliedAt],
        ['next refresh', s.nextRefreshAt],
        ['pending job', st.pending ? `\`${st.pending.jobId}\` (attempt ${st.pending.failures + 1})` : null],
        [
          'follow-up export',
          st.exportWanted ? (st.exportRetryAtMs ? `after ${iso(st.exportRetryAtMs)}` : 'yes') : 'no',
        ],
        ...this.publishingRows(s),
        ['exports / refreshes', `${st.exportsDone} / ${st.refreshesDone}`],
        ['last error', st.lastError],
        ['continued as new', st.generation],
      ]),
    );
  }

  /** Web UI rows of a keeper with a source: what it builds, the commit applied and where it came from. */
  private publishingRows(s: KeeperStatus): [string, string | number | null][] {
    const p = s.publishing;
    if (!p) return [];
    const update = p.update;
    return [
      ['source', `${p.source.repository} @ ${p.source.ref} (project ${p.source.projectId})`],
      ['commit applied', p.commit ? `\`${p.commit.sha.slice(0, 12)}\` ${p.commit.message ?? ''}` : null],
      ['pull request', p.commit?.pullRequest ? `[#${p.commit.pullRequest.number}](${p.commit.pullRequest.url})` : null],
      ['agent job', p.commit?.agentWorkflowId ? `\`${p.commit.agentWorkflowId}\`` : null],
      ['deployment update', update ? `\`${update.statusId ?? '—'}\` ${update.status}` : null],
      ['update error', update?.error ?? null],
      ['publish waiting', p.publishWanted ? 'yes' : 'no'],
    ];
  }

  /**
   * Verify (unless the sink verifies itself) and apply `bundle`. Returns the applied record, or throws
   * the activity failure: the caller keeps the previous config and schedules a retry.
   */
  private async install(
    bundle: Bundle,
    version: string | null,
    issuedAtMs: number,
    why: string,
  ): Promise<AppliedBundle> {
    const { domain, st } = this;
    const sinkType = this.sinkType();
    if (sinkType !== 'mirror') {
      await verifier.verifyBundle.executeWithOptions({ summary: `Verify bundle of ${bundle.jobId} (${why})` }, [
        bundle,
      ]);
    }
    const applied = await applier.applyBundle.executeWithOptions(
      { summary: `Apply bundle of ${bundle.jobId} via ${sinkType} (${why})` },
      [
        {
          domain,
          // A named run applies the name the worker resolved, and says which type it expects.
          ...(this.named && st.sinkResolved
            ? { sink: st.sinkResolved.name, sinkType: st.sinkResolved.type }
            : { sink: this.sinkRef }),
          jobId: bundle.jobId,
          bundleUrl: bundle.bundleUrl,
          expiresAt: bundle.expiresAt,
          sizeBytes: bundle.sizeBytes,
          version,
        },
      ],
    );
    const expiresMs = applied.appliedExpiresAt === null ? null : Date.parse(applied.appliedExpiresAt);
    return {
      jobId: bundle.jobId,
      appliedUrl: applied.appliedUrl,
      appliedExpiresAt: applied.appliedExpiresAt,
      linkIssuedAtMs: issuedAtMs,
      sizeBytes: bundle.sizeBytes,
      version,
      appliedAt: iso(Date.now()),
      refreshAtMs:
        expiresMs === null || !Number.isFinite(expiresMs)
          ? null
          : refreshAtMs(issuedAtMs, expiresMs, this.input.refreshMargin),
      refreshFailures: 0,
    };
  }

  startExport(): void {
    const { domain, st } = this;
    this.exporting = true;
    st.exportWanted = false;
    if (st.publishing) {
      this.exportCommit = st.publishing.ready;
      st.publishing.ready = null;
    }
    const version = st.version;
    const workflowId = exportWorkflowId(domain, `keeper-${uuid4()}`);
    void executeChild(staticExport, {
      workflowId,
      args: [{ domain, ...(version ? { version } : {}) }],
      staticSummary: `Export for the bundle keeper of ${domain}`,
    })
      .then(
        (ok) => {
          this.exportOutcome = { ok };
        },
        (err: unknown) => {
          this.exportOutcome = { err };
        },
      )
      .finally(() => {
        this.exporting = false;
        this.wake++;
      });
  }

  /** An export finished: queue its bundle for install, or back off after a failure. */
  takeExportOutcome(outcome: ExportOutcome): void {
    const { domain, st } = this;
    if ('ok' in outcome) {
      const r = outcome.ok;
      st.exportsDone++;
      st.exportFailures = 0;
      st.exportRetryAtMs = null;
      st.pending = {
        jobId: r.jobId,
        version: st.version,
        bundle: { bundleUrl: r.bundleUrl, expiresAt: r.expiresAt, sizeBytes: r.sizeBytes },
        failures: 0,
        retryAtMs: null,
        ...(this.exportCommit ? { commit: this.exportCommit } : {}),
      };
      this.exportCommit = null;
      return;
    }
    // The commit is still to be exported (unless a newer one is ready).
    if (st.publishing && !st.publishing.ready) st.publishing.ready = this.exportCommit;
    this.exportCommit = null;
    const type = failureType(outcome.err);
    st.lastError = `export failed: ${failureMessage(outcome.err)}`;
    if (type && FATAL_EXPORT_FAILURES.has(type)) {
      this.show();
      throw ApplicationFailure.create({
        type,
        message: `bundle keeper for ${domain} stops: ${failureMessage(outcome.err)}`,
        nonRetryable: true,
      });
    }
    st.exportFailures++;
    st.exportWanted = true;
    st.exportRetryAtMs = Date.now() + retryDelayMs(st.exportFailures, undefined, EXPORT_BACKOFF);
    log.warn('export for the bundle keeper failed; will retry', { domain, type, failures: st.exportFailures });
  }

  /** Install the pending export's bundle (first its own link, later a fresh one). */
  async installPending(): Promise<void> {
    const { domain, st } = this;
    const pending = st.pending!;
    try {
      let bundle: Bundle;
      let issuedAtMs = Date.now();
      if (pending.bundle) {
        bundle = { jobId: pending.jobId, ...pending.bundle };
      } else {
        bundle = await api.generateBundle.executeWithOptions(
          { summary: `Fresh bundle link for export ${pending.jobId} (retry)` },
          [pending.jobId],
        );
        issuedAtMs = Date.now();
      }
      const installed = await this.install(bundle, pending.version, issuedAtMs, 'new export');
      st.current = pending.commit ? { ...installed, commit: pending.commit } : installed;
      st.sinkRefused = null;
      st.pending = null;
      st.lastError = null;
      this.upsertJob(st.current.jobId);
      if (this.pub && pending.commit) await this.pub.applied(pending.commit);
    } catch (err) {
      this.noteRefusedApply(err);
      pending.failures++;
      pending.bundle = null;
      pending.retryAtMs = Date.now() + retryDelayMs(pending.failures);
      st.lastError = `new bundle of ${pending.jobId} not applied (previous config stays): ${failureMessage(err)}`;
      if (failureType(err) === ApiFailure.notFound) {
        // The job is gone: export again instead.
        st.pending = null;
        st.exportWanted = true;
      }
      log.warn('bundle not applied; previous config stays', {
        domain,
        jobId: pending.jobId,
        failures: pending.failures,
      });
    }
  }

  /** Fresh link for the live job, verify, apply. */
  async refreshCurrent(): Promise<void> {
    const { domain, st } = this;
    const current = st.current!;
    try {
      const bundle = await api.generateBundle.executeWithOptions(
        { summary: `Refresh bundle link of ${current.jobId} before it expires` },
        [current.jobId, { refresh: true }],
      );
      const issuedAtMs = Date.now();
      const installed = await this.install(bundle, current.version, issuedAtMs, 'refresh');
      st.current = current.commit ? { ...installed, commit: current.commit } : installed;
      st.sinkRefused = null;
      st.refreshesDone++;
      st.lastError = null;
    } catch (err) {
      this.noteRefusedApply(err);
      current.refreshFailures++;
      // While the live link is valid, retry often enough to fit several attempts before it expires;
      // once it has expired (a long outage), plain exponential back-off.
      const leftMs = (current.appliedExpiresAt ? Date.parse(current.appliedExpiresAt) : Date.now()) - Date.now();
      current.refreshAtMs = Date.now() + retryDelayMs(current.refreshFailures, leftMs > 0 ? leftMs : undefined);
      st.lastError = `refresh of ${current.jobId} failed (live link expires ${current.appliedExpiresAt}): ${failureMessage(err)}`;
      if (failureType(err) === ApiFailure.notFound && !this.exporting) st.exportWanted = true;
      log.warn('bundle refresh failed; will retry before expiry', {
        domain,
        jobId: current.jobId,
        failures: current.refreshFailures,
      });
    }
  }

  /** Does the next thing that is due, if any: true when it did something (look again at once). */
  async step(): Promise<boolean> {
    const { st } = this;
    if (st.paused) return false;
    if (this.exportOutcome) {
      const outcome = this.exportOutcome;
      this.exportOutcome = null;
      this.takeExportOutcome(outcome);
      this.cyclesThisRun++;
      return true;
    }
    if (this.sinkBlocked()) {
      if (!due(st.sinkRefused?.retryAtMs)) return false;
      await this.resolveSink();
      return true;
    }
    if (st.pending && due(st.pending.retryAtMs)) {
      await this.installPending();
      this.cyclesThisRun++;
      return true;
    }
    if (st.current?.refreshAtMs != null && due(st.current.refreshAtMs)) {
      await this.refreshCurrent();
      this.cyclesThisRun++;
      return true;
    }
    if (this.pub) {
      const stepped = await this.pub.step(Date.now());
      if (stepped !== null && stepped !== 'busy') {
        // Built and published: export it (a follow-up export when one runs now).
        st.publishing!.ready = stepped;
        st.exportWanted = true;
        st.exportRetryAtMs = null;
      }
      if (stepped !== null) return true;
    }
    if (st.exportWanted && !this.exporting && due(st.exportRetryAtMs)) {
      this.startExport();
      return true;
    }
    return false;
  }

  /** Sleeps until the earliest due moment, or until a signal or the export child wakes the keeper. */
  async sleepUntilDue(): Promise<void> {
    const { st } = this;
    const dueTimes = st.paused
      ? []
      : this.sinkBlocked()
        ? [st.sinkRefused?.retryAtMs ?? Date.now()]
        : [
            st.pending?.retryAtMs,
            st.current?.refreshAtMs,
            st.exportWanted && !this.exporting ? st.exportRetryAtMs : null,
            this.pub?.dueAtMs(),
          ].filter((t): t is number => typeof t === 'number');
    const seen = this.wake;
    if (dueTimes.length === 0) {
      await condition(() => this.wake !== seen);
    } else {
      const waitMs = Math.max(1, Math.min(...dueTimes) - Date.now());
      await condition(() => this.wake !== seen, waitMs);
    }
  }
}

export async function bundleKeeper(input: BundleKeeperInput): Promise<void> {
  validate(input);
  const keeper = new Keeper(input);
  keeper.registerHandlers();
  keeper.initSearchAttributes();
  for (;;) {
    keeper.show();
    if (await keeper.step()) continue;

    const limit = input.continueAsNewAfterCycles;
    const { st } = keeper;
    if (
      !keeper.exporting &&
      !keeper.exportOutcome &&
      (workflowInfo().continueAsNewSuggested || (limit !== undefined && keeper.cyclesThisRun >= limit))
    ) {
      await condition(allHandlersFinished);
      const { carried: _earlierRelease, ...next } = input;
      return continueAsNew<typeof bundleKeeper>({ ...next, carry: { ...st, generation: st.generation + 1 } });
    }
    await keeper.sleepUntilDue();
  }
}
