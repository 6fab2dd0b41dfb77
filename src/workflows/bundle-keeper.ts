// bundleKeeper: one long-lived workflow per domain (id keeperWorkflowId(domain); a second start attaches)
// that keeps a deployment's config pointing at a valid, verified bundle. Its lifecycle (docs/design.md,
// "The bundle keeper"): the sink resolving, resolved or refused by the worker's sinks file; an export
// (a staticExport child) idle, wanted, running or finished; the bundle it exported pending until
// verified and applied; the applied one refreshed before its link expires; with a `source`, publishes
// built by a deployment update first (./publishing.ts). The loop at the bottom does whatever is due,
// else sleeps until something is, and continues as new when the server suggests it (mustContinueAsNew).
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  executeChild,
  log,
  patched,
  setCurrentDetails,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { Bundle } from '../api/types';
import {
  type AppliedBundle,
  type BundleKeeperInput,
  type BundleKeeperCarry,
  type CarriedExport,
  type KeeperPhase,
  type KeeperSink,
  type KeeperStatus,
  SINK_REFUSED,
  SINK_TYPES,
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
import { decodeKeeperCarry, keeperCarries, nextKeeperInput } from '../policies/validation/keeper-compat';
import { deploymentProblems } from '../policies/validation/deployment';
import {
  ApiFailure,
  WorkflowFailure,
  failureMessage,
  failureType,
  invalidInput,
  nonRetryable,
} from '../shared/failures';
import { iso, linkForDisplay, markdownTable } from './details';
import { refreshAtMs, retryDelayMs } from '../policies/keeper-schedule';
import { staticExport } from './static-export';
import { Publisher, initialPublishing } from './publishing';
import { api, installer } from './keeper-calls';
import { reservedWorkflowIdProblems } from './reserved-ids';
import { keeperCountsWakesDuringStep } from './earlier-runs';
import { branchOf, repositoryKey } from '../policies/validation/publish';

/** Failures after which the keeper cannot do anything useful: it fails instead of retrying forever. */
const FATAL_EXPORT_FAILURES = new Set<string>([ApiFailure.planRequired, WorkflowFailure.invalidInput]);

/** Runs that started before named sinks apply their input's inline sink as given (the `given` sink). */
const KEEPER_NAMED_SINKS = 'keeper-named-sinks';

/** Back-off between checks of a refused sink: the operator is editing the sinks file. */
const SINK_BACKOFF = { baseMs: 10_000, maxMs: 5 * 60_000 };

/** Back-off between failed exports (a failed export is a whole re-render: slower than link retries). */
const EXPORT_BACKOFF = { baseMs: 60_000, maxMs: 60 * 60_000 };

type ExportOutcome = { ok: StaticExportResult } | { err: unknown };
/** A publish or pin that arrived while an export runs: one more export after it (renders `commit`). */
type FollowUp = { commit: PublishedCommit | null };
/** The export: idle or wanted (carried), running (a staticExport child), finished (its outcome not taken yet). */
type Running = { state: 'running'; commit: PublishedCommit | null; failures: number; next: FollowUp | null };
type Finished = Omit<Running, 'state'> & { state: 'finished'; outcome: ExportOutcome };
type ExportState = CarriedExport | Running | Finished;

/** The carried state but the export and the sink, which the keeper holds as ExportState and SinkState. */
type KeeperState = Omit<BundleKeeperCarry, 'export' | 'sink'>;

type Refusal = { reason: string; checks: number; retryAtMs: number };
/**
 * The sink: as the worker answered (KeeperSink), or `given`: a run that started before the keeper named
 * its sinks applies its input's inline sink as is, and only shows a refusal. `given` goes with the patch
 * keeper-named-sinks, once no keeper started by such a release runs (its next run resolves).
 */
type SinkState = KeeperSink | { state: 'given'; type: SinkType | undefined; refused: Refusal | null };

function initialState(input: BundleKeeperInput): BundleKeeperCarry {
  return {
    current: null,
    pending: null,
    version: input.version ?? null,
    exportsDone: 0,
    refreshesDone: 0,
    paused: false,
    export: { state: 'wanted', commit: null, retryAtMs: null, failures: 0 },
    sink: { state: 'resolving' },
    lastError: null,
    generation: 0,
  };
}

function validate(input: BundleKeeperInput): void {
  const { problems, conflicts } = checkKeeperInput(input, { sink: 'worker' });
  problems.push(...reservedWorkflowIdProblems());
  // Only the keeper's own past: a carry says which sink is resolved and which bundle to apply next.
  if (typeof input === 'object' && input !== null)
    problems.push(...carriedStateProblems(workflowInfo(), keeperCarries(input), keeperCarryProblems));
  if (problems.length > 0) throw invalidInput('bundleKeeper', problems);
  throwConflicts(input.domain, conflicts);
}

function throwConflicts(domain: string, conflicts: string[]): void {
  if (conflicts.length > 0) {
    throw nonRetryable(
      WorkflowFailure.deploymentKindConflict,
      `deployment kind conflict for ${domain}: ${conflicts.join('; ')}`,
    );
  }
}

/** The `type` of an inline sink object (or of anything else: undefined). */
const typeOf = (ref: unknown): unknown =>
  typeof ref === 'object' && ref !== null ? (ref as { type?: unknown }).type : undefined;

/** How the Web UI shows a sink reference the worker has not resolved (never an inline sink's address). */
function sinkLabel(ref: unknown): string {
  if (typeof ref === 'string') return `"${ref.slice(0, 64)}"`;
  const type = typeOf(ref);
  return typeof type === 'string' ? `an inline ${type.slice(0, 16)} sink` : 'an inline sink';
}

/** A retry or refresh time that has come (or none set). */
const due = (atMs: number | null | undefined) => atMs === null || atMs === undefined || atMs <= Date.now();

/** What the keeper is doing: the status query's `state`. */
function phaseOf(st: KeeperState, sink: SinkState, exp: ExportState): KeeperPhase {
  if (st.paused) return 'paused';
  switch (sink.state) {
    case 'resolving':
      return 'checking-sink';
    case 'refused':
      return 'sink-refused';
  }
  if (exp.state === 'running') return 'exporting';
  if (st.pending) return 'installing';
  return st.current ? 'keeping' : 'starting';
}

/** The Web UI's words for each state. */
const PHASE_WORDS: Record<KeeperPhase, string> = {
  paused: 'paused',
  'checking-sink': 'checking its sink',
  'sink-refused': 'waiting: sink refused',
  exporting: 'exporting',
  installing: 'installing a new bundle',
  keeping: 'keeping',
  starting: 'starting',
};

/**
 * One keeper run: the carried state (`st`, its export `exp` and `sink`), what lives only in
 * this run (wake-ups, cycles), and the operations of the lifecycle. The workflow function below is the
 * loop that picks the next one.
 */
class Keeper {
  readonly st: KeeperState;
  exp: ExportState;
  sink: SinkState;
  readonly domain: string;
  /** The sink as the input gives it: a name by the contract, but whatever JSON a starter sent (the worker judges). */
  readonly sinkRef: unknown;
  /** A run continued from an earlier one (its carry passed validate()). */
  readonly continued: boolean;
  wake = 0;
  cyclesThisRun = 0;
  /** Keepers with a source: their publishing rounds. */
  readonly pub: Publisher | null;
  private upsertedJobId: string | null = null;

  constructor(readonly input: BundleKeeperInput) {
    this.domain = input.domain;
    this.sinkRef = (input as { sink: unknown }).sink;
    const carry = decodeKeeperCarry(input);
    this.continued = carry !== null;
    const { export: exp, sink, ...st } = carry ?? initialState(input);
    this.st = st;
    this.exp = exp;
    this.sink = patched(KEEPER_NAMED_SINKS)
      ? sink
      : {
          state: 'given',
          type: SINK_TYPES.find((t) => t === typeOf(this.sinkRef)),
          refused: sink.state === 'refused' ? sink : null,
        };
    this.pub = input.source
      ? new Publisher(input.domain, input.source, (this.st.publishing ??= initialPublishing()))
      : null;
  }

  /** A sink the worker has not (or no longer) accepted: nothing is exported or applied. */
  sinkBlocked(): boolean {
    return this.sink.state === 'resolving' || this.sink.state === 'refused';
  }

  private refusal(): Refusal | null {
    if (this.sink.state === 'refused') return this.sink;
    return this.sink.state === 'given' ? this.sink.refused : null;
  }

  /** Asks the worker for the sink; refused, waits (with back-off) and asks again. */
  async resolveSink(): Promise<void> {
    const answer = await api.resolveSink.executeWithOptions({ summary: `Resolve sink ${sinkLabel(this.sinkRef)}` }, [
      // Only a continued keeper may go on with an inline sink equal to one of the file.
      { domain: this.domain, sink: this.sinkRef, allowInline: this.continued },
    ]);
    if ('refused' in answer) {
      const checks = (this.refusal()?.checks ?? 0) + 1;
      const retryAtMs = Date.now() + retryDelayMs(checks, undefined, SINK_BACKOFF);
      this.sink = { state: 'refused', reason: answer.refused, checks, retryAtMs };
      log.warn("the worker refused the keeper's sink; nothing is applied until its sinks file holds it", {
        domain: this.domain,
        checks,
      });
      return;
    }
    const { kind, features } = this.input;
    throwConflicts(this.domain, deploymentProblems({ kind, features, sinkType: answer.type }));
    this.sink = { state: 'resolved', ...answer };
  }

  /** An apply the worker refused (the file changed): the sink is asked for again before anything else. */
  private noteRefusedApply(err: unknown): void {
    if (failureType(err) !== SINK_REFUSED) return;
    const refused = { reason: failureMessage(err), checks: (this.refusal()?.checks ?? 0) + 1, retryAtMs: Date.now() };
    if (this.sink.state === 'given') this.sink.refused = refused;
    else this.sink = { state: 'refused', ...refused };
  }

  /** An apply passed: the sink is held. */
  private sinkHeld(): void {
    if (this.sink.state === 'given') this.sink.refused = null;
  }

  /** The sink's type as far as the keeper knows it. */
  private sinkType(): SinkType | undefined {
    return this.sink.state === 'resolved' || this.sink.state === 'given' ? this.sink.type : undefined;
  }

  /**
   * Another export is owed: rendering `commit` (null: the one already owed, if any); `now` drops a failed
   * export's back-off. While one runs, a single follow-up is owed however many arrive.
   */
  private want(commit: PublishedCommit | null, now: boolean): void {
    const exp = this.exp;
    switch (exp.state) {
      case 'idle':
        this.exp = { state: 'wanted', commit, retryAtMs: null, failures: 0 };
        return;
      case 'wanted':
        this.exp = { ...exp, commit: commit ?? exp.commit, retryAtMs: now ? null : exp.retryAtMs };
        return;
      default:
        exp.next = { commit: commit ?? exp.next?.commit ?? null };
    }
  }

  /** The built commit owed the next export (not the running one). */
  private owedCommit(): PublishedCommit | null {
    if (this.exp.state === 'wanted') return this.exp.commit;
    return this.exp.state === 'idle' ? null : (this.exp.next?.commit ?? null);
  }

  /** Commits the keeper's exports and bundles hold: a publish naming one starts nothing. */
  private heldShas(): (string | undefined)[] {
    const running = this.exp.state === 'running' || this.exp.state === 'finished' ? this.exp.commit : null;
    return [running?.sha, this.owedCommit()?.sha, this.st.pending?.commit?.sha, this.st.current?.commit?.sha];
  }

  status(): KeeperStatus {
    const { st, exp } = this;
    return {
      state: phaseOf(st, this.sink, exp),
      pendingJobId: st.pending?.jobId ?? null,
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
      exporting: exp.state === 'running',
      exportWanted: exp.state === 'wanted' || (exp.state !== 'idle' && exp.next !== null),
      sinkRefused: this.refusal()?.reason ?? null,
      ...(this.pub ? { publishing: this.pub.status(st.current?.commit) } : {}),
    };
  }

  /** The status query and the publish / pin / pause / resume signals. */
  registerHandlers(): void {
    const { st } = this;
    setHandler(keeperStatusQuery, () => this.status());
    setHandler(publishSignal, (request) => {
      if (this.pub) {
        if (this.pub.accept(request, Date.now(), this.heldShas())) this.wake++;
        return;
      }
      this.want(null, true); // new content: try now, whatever the back-off said
      this.wake++;
    });
    setHandler(pinVersionSignal, (version) => {
      st.version = typeof version === 'string' && version.trim() !== '' ? version : null;
      this.want(null, true);
      this.wake++;
    });
    setHandler(pauseSignal, () => this.pause(true));
    setHandler(resumeSignal, () => this.pause(false));
  }

  private pause(paused: boolean): void {
    this.st.paused = paused;
    this.wake++;
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
    const { st, sink } = this;
    const s = this.status();
    const refusal = this.refusal();
    setCurrentDetails(
      markdownTable(`Bundle keeper · ${this.domain}`, [
        ['state', PHASE_WORDS[phaseOf(st, sink, this.exp)]],
        ['sink', this.sinkRow()],
        ['sink refused', refusal ? `${refusal.reason} (checked ${refusal.checks}x)` : null],
        ['kind', this.input.kind ?? 'client-hosted'],
        ['job', s.jobId ? `\`${s.jobId}\`` : null],
        ['applied link', linkForDisplay(s.bundleUrl)],
        ['link expires', s.expiresAt ?? (st.current ? 'never (mirrored)' : null)],
        ['version', st.version ?? 'latest'],
        ['last applied', s.lastAppliedAt],
        ['next refresh', s.nextRefreshAt],
        ['pending job', st.pending ? `\`${st.pending.jobId}\` (attempt ${st.pending.failures + 1})` : null],
        ['follow-up export', this.followUpRow()],
        ...this.publishingRows(s),
        ['exports / refreshes', `${st.exportsDone} / ${st.refreshesDone}`],
        ['last error', st.lastError],
        ['continued as new', st.generation],
      ]),
    );
  }

  private sinkRow(): string | undefined {
    if (this.sink.state === 'resolved') return `${this.sink.name} (${this.sink.type})`;
    return this.sink.state === 'given' ? this.sink.type : sinkLabel(this.sinkRef);
  }

  private followUpRow(): string {
    const exp = this.exp;
    if (exp.state === 'wanted') return exp.retryAtMs ? `after ${iso(exp.retryAtMs)}` : 'yes';
    return exp.state !== 'idle' && exp.next ? 'yes' : 'no';
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

  /** Where applyBundle applies: the name the worker resolved (and the type it expects), or the given sink. */
  private applyTarget(): { sink: unknown; sinkType?: SinkType } {
    return this.sink.state === 'resolved' ? { sink: this.sink.name, sinkType: this.sink.type } : { sink: this.sinkRef };
  }

  /**
   * Verify (unless the sink verifies itself) and apply `bundle`. Returns the applied record, or throws
   * the activity failure: the caller keeps the previous config and schedules a retry.
   */
  private async install(
    bundle: Bundle,
    from: { version: string | null; commit?: PublishedCommit | null },
    issuedAtMs: number,
    why: string,
  ): Promise<AppliedBundle> {
    const { version, commit } = from;
    const sinkType = this.sinkType();
    if (sinkType !== 'mirror') {
      await installer.verifyBundle.executeWithOptions({ summary: `Verify bundle of ${bundle.jobId} (${why})` }, [
        bundle,
      ]);
    }
    const { jobId, bundleUrl, expiresAt, sizeBytes } = bundle;
    const applied = await installer.applyBundle.executeWithOptions(
      { summary: `Apply bundle of ${bundle.jobId} via ${sinkType} (${why})` },
      [{ domain: this.domain, ...this.applyTarget(), jobId, bundleUrl, expiresAt, sizeBytes, version }],
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
      ...(commit ? { commit } : {}),
    };
  }

  /** Starts the wanted export as a staticExport child; it finishes on its own (the loop takes its outcome). */
  startExport(wanted: Extract<CarriedExport, { state: 'wanted' }>): void {
    const { domain, st } = this;
    const running: Running = { state: 'running', commit: wanted.commit, failures: wanted.failures, next: null };
    this.exp = running;
    const version = st.version;
    void executeChild(staticExport, {
      workflowId: exportWorkflowId(domain, `keeper-${uuid4()}`),
      args: [{ domain, ...(version ? { version } : {}) }],
      staticSummary: `Export for the bundle keeper of ${domain}`,
    })
      .then(
        (ok): ExportOutcome => ({ ok }),
        (err: unknown): ExportOutcome => ({ err }),
      )
      .then((outcome) => {
        // `running` itself: its follow-up may have been asked for meanwhile.
        this.exp = { ...running, state: 'finished', outcome };
        this.wake++;
      });
  }

  /** An export finished: queue its bundle for install, or back off after a failure. */
  takeExportOutcome(done: Finished): void {
    const { domain, st } = this;
    const { outcome } = done;
    if ('ok' in outcome) {
      const r = outcome.ok;
      st.exportsDone++;
      st.pending = {
        jobId: r.jobId,
        version: st.version,
        bundle: { bundleUrl: r.bundleUrl, expiresAt: r.expiresAt, sizeBytes: r.sizeBytes },
        failures: 0,
        retryAtMs: null,
        ...(done.commit ? { commit: done.commit } : {}),
      };
      this.exp = done.next
        ? { state: 'wanted', commit: done.next.commit, retryAtMs: null, failures: 0 }
        : { state: 'idle' };
      return;
    }
    const type = failureType(outcome.err);
    st.lastError = `export failed: ${failureMessage(outcome.err)}`;
    if (type && FATAL_EXPORT_FAILURES.has(type)) {
      this.show();
      throw nonRetryable(type, `bundle keeper for ${domain} stops: ${failureMessage(outcome.err)}`);
    }
    // Its commit is still to be exported (unless a newer one is owed).
    const failures = done.failures + 1;
    const retryAtMs = Date.now() + retryDelayMs(failures, undefined, EXPORT_BACKOFF);
    this.exp = { state: 'wanted', commit: done.next?.commit ?? done.commit, retryAtMs, failures };
    log.warn('export for the bundle keeper failed; will retry', { domain, type, failures });
  }
  /** Install the pending export's bundle (first its own link, later a fresh one). */
  async installPending(): Promise<void> {
    const { domain, st } = this;
    const pending = st.pending!;
    try {
      // The export's own link first; a retry asks for a fresh one (issued when it comes).
      const bundle: Bundle = pending.bundle
        ? { jobId: pending.jobId, ...pending.bundle }
        : await api.generateBundle.executeWithOptions(
            { summary: `Fresh bundle link for export ${pending.jobId} (retry)` },
            [pending.jobId],
          );
      st.current = await this.install(bundle, pending, Date.now(), 'new export');
      this.sinkHeld();
      st.pending = null;
      st.lastError = null;
      this.upsertJob(st.current.jobId);
      if (this.pub && pending.commit) await this.pub.applied(pending.commit, this.owedCommit());
    } catch (err) {
      this.noteRefusedApply(err);
      pending.failures++;
      pending.bundle = null;
      pending.retryAtMs = Date.now() + retryDelayMs(pending.failures);
      st.lastError = `new bundle of ${pending.jobId} not applied (previous config stays): ${failureMessage(err)}`;
      if (failureType(err) === ApiFailure.notFound) {
        // The job is gone: export again instead.
        st.pending = null;
        this.want(null, false);
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
      st.current = await this.install(bundle, current, Date.now(), 'refresh');
      this.sinkHeld();
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
      if (failureType(err) === ApiFailure.notFound && this.exp.state !== 'running') this.want(null, false);
      log.warn('bundle refresh failed; will retry before expiry', {
        domain,
        jobId: current.jobId,
        failures: current.refreshFailures,
      });
    }
  }

  /** Does the next thing that is due, if any: true when it did something (look again at once). */
  async step(): Promise<boolean> {
    const { st, sink } = this;
    if (st.paused) return false;
    if (this.exp.state === 'finished') {
      this.takeExportOutcome(this.exp);
      this.cyclesThisRun++;
      return true;
    }
    if (this.sinkBlocked()) {
      if (sink.state === 'refused' && !due(sink.retryAtMs)) return false;
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
      // Built and published: export it (a follow-up export when one runs now).
      if (stepped.step === 'built') this.want(stepped.commit, true);
      if (stepped.step !== 'idle') return true;
    }
    if (this.exp.state === 'wanted' && due(this.exp.retryAtMs)) {
      this.startExport(this.exp);
      return true;
    }
    return false;
  }

  /** The moments something falls due (none: only a signal or the export child wakes the keeper). */
  private dueTimes(): number[] {
    const { st, sink } = this;
    if (st.paused) return [];
    if (this.sinkBlocked()) return [sink.state === 'refused' ? sink.retryAtMs : Date.now()];
    const exportAtMs = this.exp.state === 'wanted' ? this.exp.retryAtMs : null;
    return [st.pending?.retryAtMs, st.current?.refreshAtMs, exportAtMs, this.pub?.dueAtMs()].filter(
      (t): t is number => typeof t === 'number',
    );
  }

  /**
   * Sleeps until the earliest due moment, or until a signal or the export child wakes the keeper;
   * `wakeBeforeStep` is the wake count as the step that found nothing to do began.
   */
  async sleepUntilDue(wakeBeforeStep: number): Promise<void> {
    if (this.wake !== wakeBeforeStep && keeperCountsWakesDuringStep()) return;
    const dueTimes = this.dueTimes();
    const seen = this.wake;
    const woken = () => this.wake !== seen;
    if (dueTimes.length === 0) await condition(woken);
    else await condition(woken, Math.max(1, Math.min(...dueTimes) - Date.now()));
  }

  /** Between cycles, with no export running or untaken: when the server suggests it (or the input's cycles). */
  mustContinueAsNew(): boolean {
    if (this.exp.state === 'running' || this.exp.state === 'finished') return false;
    const limit = this.input.continueAsNewAfterCycles;
    return workflowInfo().continueAsNewSuggested || (limit !== undefined && this.cyclesThisRun >= limit);
  }

  /** What the next run carries: the export owed (none runs) and the sink as the worker answered. */
  carry(): BundleKeeperCarry {
    const { st, exp, sink } = this;
    if (exp.state === 'running' || exp.state === 'finished') throw new Error('an export runs: no carry');
    const refused = sink.state === 'given' && sink.refused ? { state: 'refused' as const, ...sink.refused } : null;
    const carried = sink.state === 'given' ? (refused ?? { state: 'resolving' as const }) : sink;
    return { ...st, export: exp, sink: carried, generation: st.generation + 1 };
  }
}

export async function bundleKeeper(input: BundleKeeperInput): Promise<void> {
  validate(input);
  const keeper = new Keeper(input);
  keeper.registerHandlers();
  keeper.initSearchAttributes();
  for (;;) {
    keeper.show();
    const wakeBeforeStep = keeper.wake;
    if (await keeper.step()) continue;
    if (keeper.mustContinueAsNew()) {
      await condition(allHandlersFinished);
      return continueAsNew<typeof bundleKeeper>(nextKeeperInput(input, keeper.carry()));
    }
    await keeper.sleepUntilDue(wakeBeforeStep);
  }
}
