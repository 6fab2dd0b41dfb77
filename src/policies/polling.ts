// Polling policies for the two asynchronous jobs. Pure and deterministic: workflows call them with the
// poll results seen so far and sleep for the returned number of milliseconds. No I/O, no Node built-ins.
//
// exportPollDelay predicts the completion time from the progress rate over a recent window, approaches it
// in shrinking steps and polls at the earliest plausible completion (the prediction minus the uncertainty
// of when the last progress change happened). Without a usable rate, or once overdue (a stall at 99), it
// polls at a fraction of the time without news, so calls grow logarithmically while a ceiling bounds the
// lag. While queued it backs off to a much lower cap (25 s, see the queued branch for why), relaxed
// towards the ceiling only after a long wait in the queue. Its finishing stretch at 100 % (or just below)
// and agentPollDelay's shape: docs/design.md, "Polling and history".
// The defaults are tuned with bench/polling-sim.ts; bench/results/polling.md has the measured figures.

import type { Observation } from '../shared/observation';

export type { Observation };

/** Shared by both policies. */
export interface JitterOptions {
  /** Relative jitter, applied symmetrically (0.1 = +-10 %) and then clamped to the floor and ceiling. */
  jitter?: number;
  /** Source of uniform numbers in [0, 1). Default: a hash of the observations and nowMs (deterministic). */
  random?: () => number;
}

export interface ExportPollOptions extends JitterOptions {
  /** Never poll sooner than this. */
  floorMs?: number;
  /** Never wait longer than this while running (bounds the detection lag of an unpredictable job). */
  ceilingMs?: number;
  /** While queued: wait this fraction of the time spent queued ... */
  queuedFraction?: number;
  /**
   * ... but at most this long: a queued job can start at any moment, so a job that starts and finishes
   * within one wait is seen up to this long minus its running time after it finished.
   */
  queuedCeilingMs?: number;
  /**
   * After a long wait in the queue the cap relaxes to this fraction of the time queued (still at most
   * ceilingMs), so an export stuck in the queue for an hour costs about as few calls as a running one.
   */
  longQueueFraction?: number;
  /** Without a usable rate (no progress yet, or no progress field): fraction of the time without news. */
  noSignalFraction?: number;
  /** Far from the predicted completion: wait this fraction of the predicted remaining time. */
  approachFraction?: number;
  /** When approachFraction x remaining falls below this, poll right at the earliest plausible completion. */
  snapMs?: number;
  /**
   * Inside the completion window (the prediction +- its uncertainty, which comes from the time between
   * the two polls that bracket the last progress change), poll every this fraction of the half-width.
   */
  windowStepFraction?: number;
  /** Past the predicted completion (or stuck after some progress): fraction of the overdue time ... */
  overdueFraction?: number;
  /** ... but at most this long. */
  overdueCeilingMs?: number;
  /** How many recent progress points the rate is estimated from. */
  rateWindow?: number;
  /** Progress at or above this reads as all pages done: the job is finishing (packaging), not stalled. */
  finishedProgress?: number;
  /**
   * The finishing stretch is expected to end within this many progress points' worth of time at the
   * run's pace (1 point = 1 % of the run) after progress reached finishedProgress; past that it backs off
   * like a stall.
   */
  finishingPoints?: number;
  /** In the finishing stretch: wait this fraction of the time left in it ... */
  finishingFraction?: number;
  /** ... at most this long (bounds the lag of the finish) and at least finishingMinMs. */
  finishingCeilingMs?: number;
  finishingMinMs?: number;
}

export interface AgentPollOptions extends JitterOptions {
  floorMs?: number;
  /** Fraction of the elapsed time since the first observation. */
  fraction?: number;
  /** Never wait longer than this (bounds the detection lag). */
  capMs?: number;
}

export const DEFAULT_EXPORT_POLL_OPTIONS: Readonly<Required<Omit<ExportPollOptions, 'random'>>> = {
  floorMs: 2_000,
  ceilingMs: 60_000,
  queuedFraction: 1,
  queuedCeilingMs: 25_000,
  longQueueFraction: 0.1,
  noSignalFraction: 1,
  approachFraction: 0.5,
  snapMs: 20_000,
  windowStepFraction: 0.5,
  overdueFraction: 0.5,
  overdueCeilingMs: 50_000,
  rateWindow: 6,
  finishedProgress: 99.9,
  finishingPoints: 3,
  finishingFraction: 0.25,
  finishingCeilingMs: 12_000,
  finishingMinMs: 5_000,
  jitter: 0.1,
};

export const DEFAULT_AGENT_POLL_OPTIONS: Readonly<Required<Omit<AgentPollOptions, 'random'>>> = {
  floorMs: 3_000,
  fraction: 0.5,
  capMs: 28_000,
  jitter: 0.1,
};

/**
 * How many of the most recent observations the policies look at. Callers that keep a bounded history
 * (e.g. across continue-as-new) should keep at least this many; older ones are ignored anyway.
 */
export const maxObservationsNeeded = 20;

/**
 * The observations the policies need (plain array, safe to carry across continue-as-new): the last
 * maxObservationsNeeded, where polls in a row that saw the same status and progress keep only the first
 * and the last of them. That is all the policies read of such a run (when the value was first and last
 * seen), and a long wait at one value (in the queue, at 100 %) no longer pushes the progress before it,
 * which the pace is measured from, out of the history.
 */
export function recentObservations(observations: readonly Observation[]): Observation[] {
  const inside = (i: number): boolean =>
    samePlateau(observations[i - 1], observations[i]) && samePlateau(observations[i], observations[i + 1]);
  return observations.filter((_, i) => !inside(i)).slice(-maxObservationsNeeded);
}

function samePlateau(a: Observation | undefined, b: Observation | undefined): boolean {
  return (
    a !== undefined &&
    b !== undefined &&
    Number.isFinite(a.atMs) &&
    Number.isFinite(b.atMs) &&
    normStatus(a.status) === normStatus(b.status) &&
    normProgress(a.progress) === normProgress(b.progress)
  );
}

const TERMINAL_HINT = new Set(['completed', 'failed']);

/** The options over their defaults (undefined keeps the default), and the floor, never negative. */
function withDefaults<D extends { floorMs: number }, O extends object>(defaults: D, options: O) {
  const o = { ...defaults, ...definedOnly(options) };
  return { o, floor: Math.max(0, o.floorMs) };
}

/** The recent observations with a usable time: what both policies decide on. */
function usableObservations(observations: readonly Observation[]): Observation[] {
  return recentObservations(observations).filter((x) => Number.isFinite(x.atMs));
}

/** How long the job has been queued: since the start of the current queued streak (within `obs`). */
function queuedForMs(obs: readonly Observation[], nowMs: number): number {
  let i = obs.length - 1;
  while (i > 0 && normStatus(obs[i - 1]!.status) === 'queued') i--;
  return Math.max(0, nowMs - obs[i]!.atMs);
}

/**
 * The progress points of the current run: after the last queued observation and after the last
 * decrease of progress (a reset or garbage restarts the fit).
 */
function currentRunPoints(obs: readonly Observation[]): { points: { t: number; p: number }[]; runStartMs: number } {
  let start = obs.length - 1;
  while (start > 0 && normStatus(obs[start - 1]!.status) !== 'queued') start--;
  const points: { t: number; p: number }[] = [];
  let runStartMs = obs[start]!.atMs;
  for (let i = start; i < obs.length; i++) {
    const p = normProgress(obs[i]!.progress);
    if (p === undefined) continue;
    const prev = points[points.length - 1];
    if (prev && p < prev.p) {
      points.length = 0;
      runStartMs = obs[i]!.atMs;
    }
    points.push({ t: obs[i]!.atMs, p });
  }
  return { points, runStartMs };
}

/**
 * Change points: the estimated time each distinct progress value was reached, +- halfWidth. Progress
 * that rose by one step (1 for whole percentages, 0.1 for one decimal) between two polls did so at an
 * unknown moment: the midpoint. Progress that rose by k steps was moving, so it reached its value in the
 * last k-th of the interval (taking the midpoint there made one-decimal progress look twice as fast).
 */
function changePoints(points: readonly { t: number; p: number }[]): { t: number; p: number; halfWidth: number }[] {
  const step = progressStep(points);
  const changes: { t: number; p: number; halfWidth: number }[] = [];
  for (let i = 0; i < points.length; i++) {
    const cur = points[i]!;
    const prev = points[i - 1];
    if (!prev) changes.push({ t: cur.t, p: cur.p, halfWidth: 0 });
    else if (cur.p > prev.p) {
      const halfWidth = (cur.t - prev.t) / (2 * Math.max(1, Math.round((cur.p - prev.p) / step)));
      changes.push({ t: cur.t - halfWidth, p: cur.p, halfWidth });
    }
  }
  return changes;
}

/** The step progress moves in, from the values seen: 1 for whole percentages, 0.1 for one decimal, ... */
function progressStep(points: readonly { p: number }[]): number {
  let step = 1;
  const onGrid = (p: number): boolean => Math.abs(p / step - Math.round(p / step)) < 1e-6;
  for (const { p } of points) while (step > 0.001 && !onGrid(p)) step /= 10;
  return step;
}

/**
 * At 100 % (or just below) a running export is packaging its last pages: a short stretch (1-2 % of the
 * run seen), not a stall, so completion gets likelier with every poll. The waits shrink towards the
 * stretch's expected end (finishingPoints at the run's pace after progress got there), bounded to keep
 * the lag of the finish low. Past that end it sits far longer than its pace predicts: back off as a stall.
 */
function finishingWait(
  o: typeof DEFAULT_EXPORT_POLL_OPTIONS,
  reachedMs: number,
  rate: number,
  nowMs: number,
): { raw: number; cap: number } {
  const endMs = reachedMs + o.finishingPoints / rate;
  return nowMs < endMs
    ? { raw: Math.max(o.finishingMinMs, o.finishingFraction * (endMs - nowMs)), cap: o.finishingCeilingMs }
    : { raw: Math.max(o.finishingMinMs, o.overdueFraction * (nowMs - endMs)), cap: o.overdueCeilingMs };
}

/** Milliseconds to wait before the next static-export status poll. */
export function exportPollDelay(
  observations: readonly Observation[],
  nowMs: number,
  options: ExportPollOptions = {},
): number {
  const { o, floor } = withDefaults(DEFAULT_EXPORT_POLL_OPTIONS, options);
  const ceiling = Math.max(floor, o.ceilingMs);
  const obs = usableObservations(observations);
  const last = obs[obs.length - 1];
  const finish = (raw: number, cap: number): number =>
    applyJitter(raw, floor, Math.max(floor, Math.min(cap, ceiling)), o.jitter, o.random, obs, nowMs);

  if (!last) return finish(floor, ceiling);
  const status = normStatus(last.status);
  if (TERMINAL_HINT.has(status)) return finish(floor, ceiling);

  if (status === 'queued') {
    // A queued job can start at any moment and nothing says when. One still running at the next poll is
    // handled by the running branch below; one that starts and finishes within a wait is found up to
    // (wait - its running time) late, and the shortest exports run for seconds: so the wait is capped at
    // queuedCeilingMs. A low cap costs calls only in a long queue, so past queuedCeilingMs /
    // longQueueFraction the cap grows with the time queued, up to the ceiling (bench/results/polling.md).
    const queuedFor = queuedForMs(obs, nowMs);
    return finish(o.queuedFraction * queuedFor, Math.max(o.queuedCeilingMs, o.longQueueFraction * queuedFor));
  }

  // Running (or an unknown, non-terminal status): fit the progress of the current run.
  const { points, runStartMs } = currentRunPoints(obs);

  const lastPoint = points[points.length - 1];
  if (!lastPoint) {
    // No progress signal at all: back off like an agent job, up to the ceiling.
    return finish(o.noSignalFraction * Math.max(0, nowMs - runStartMs), ceiling);
  }

  const changes = changePoints(points);
  const anchor = changes[changes.length - 1]!;
  const rate = estimateRate(changes, Math.max(2, Math.floor(o.rateWindow)));
  const finished = changes.find((c) => c.p >= o.finishedProgress);
  if (finished && rate > 0) {
    const { raw, cap } = finishingWait(o, finished.t, rate, nowMs);
    return finish(raw, cap);
  }

  if (!(rate > 0)) {
    // Progress has not moved in the window we see. Stuck after some progress is a stall (likely near
    // the end): poll at the overdue cadence. Nothing yet: the start-up ramp.
    const quietFor = Math.max(0, nowMs - anchor.t);
    return lastPoint.p > 0
      ? finish(o.overdueFraction * quietFor, o.overdueCeilingMs)
      : finish(o.noSignalFraction * quietFor, ceiling);
  }

  // Completion window: the prediction +- the uncertainty of the anchor's time.
  const predictedMs = anchor.t + (100 - lastPoint.p) / rate;
  const earliestMs = predictedMs - anchor.halfWidth;
  if (nowMs < earliestMs) {
    const remaining = earliestMs - nowMs;
    const approach = o.approachFraction * remaining;
    // Far away: a fraction of the remaining time (the estimate improves on the way). Close: go to it.
    return finish(approach < o.snapMs ? remaining : approach, ceiling);
  }
  // In the window, then overdue (a stall at 99, or the job slowed down): poll every step of the window,
  // backing off with the time overdue, bounded.
  const step = o.windowStepFraction * anchor.halfWidth;
  return finish(Math.max(step, o.overdueFraction * (nowMs - predictedMs)), o.overdueCeilingMs);
}

/** Milliseconds to wait before the next agent job status poll. */
export function agentPollDelay(
  observations: readonly Observation[],
  nowMs: number,
  options: AgentPollOptions = {},
): number {
  const { o, floor } = withDefaults(DEFAULT_AGENT_POLL_OPTIONS, options);
  const cap = Math.max(floor, o.capMs);
  const obs = usableObservations(observations);
  const first = obs[0];
  const elapsed = first ? Math.max(0, nowMs - first.atMs) : 0;
  return applyJitter(o.fraction * elapsed, floor, cap, o.jitter, o.random, obs, nowMs);
}

/**
 * Deployment updates: no progress signal either, and a publish waits on the build before its export
 * starts, so the same shape as agentPollDelay, tighter: a 20 s build is seen within ~2 s of its end,
 * in about 15 polls (one update per keeper at a time: the calls are few).
 */
export const DEFAULT_UPDATE_POLL_OPTIONS: Readonly<Required<Omit<AgentPollOptions, 'random'>>> = {
  floorMs: 1_000,
  fraction: 0.1,
  capMs: 5_000,
  jitter: 0.1,
};

export function updatePollDelay(
  observations: readonly Observation[],
  nowMs: number,
  options: AgentPollOptions = {},
): number {
  return agentPollDelay(observations, nowMs, { ...DEFAULT_UPDATE_POLL_OPTIONS, ...options });
}

// ---- helpers ------------------------------------------------------------------------------------------

/**
 * Progress per millisecond over the last `window` change points. Not the last step alone: with whole
 * percentages and polls about as far apart as one step, single steps are too noisy to extrapolate.
 */
function estimateRate(changes: readonly { t: number; p: number }[], window: number): number {
  const n = changes.length;
  if (n < 2) return 0;
  const last = changes[n - 1]!;
  const ref = changes[Math.max(0, n - window)]!;
  return last.t > ref.t ? (last.p - ref.p) / (last.t - ref.t) : 0;
}

function normStatus(status: unknown): string {
  return typeof status === 'string' ? status.trim().toLowerCase() : '';
}

function normProgress(progress: unknown): number | undefined {
  const n = typeof progress === 'string' ? Number(progress) : progress;
  if (typeof n !== 'number' || !Number.isFinite(n)) return undefined;
  return Math.min(100, Math.max(0, n));
}

function definedOnly<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function applyJitter(
  raw: number,
  floor: number,
  cap: number,
  jitter: number,
  random: (() => number) | undefined,
  obs: readonly Observation[],
  nowMs: number,
): number {
  const base = Number.isFinite(raw) ? raw : cap;
  const u = random ? clamp01(random()) : hashUniform(obs, nowMs);
  const j = Math.max(0, Math.min(1, Number.isFinite(jitter) ? jitter : 0));
  const jittered = base * (1 + j * (2 * u - 1));
  return Math.round(Math.min(cap, Math.max(floor, jittered)));
}

function clamp01(x: number): number {
  return Number.isFinite(x) ? Math.min(1 - Number.EPSILON, Math.max(0, x)) : 0.5;
}

/** FNV-1a over nowMs and the last observation: a uniform-ish number in [0, 1), the same for the same input. */
function hashUniform(obs: readonly Observation[], nowMs: number): number {
  const last = obs[obs.length - 1];
  const key = `${nowMs}|${obs.length}|${last?.atMs ?? ''}|${last?.status ?? ''}|${last?.progress ?? ''}`;
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return (h >>> 0) / 0x1_0000_0000;
}
