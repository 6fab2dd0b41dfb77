// The rate limiter's window: the bounds a window must keep (AGENT_RATE_LIMIT, a limiter's start) and the
// one rule for an ask (src/workflows/rate-limiter.ts). A limiter enforces the window it started with;
// an ask naming another is refused, never adopted: whoever can send an update must not lift a limit.
// Pure, no Temporal imports: the workflow, the worker's config and the tests share it.
import { defaultMarginMs } from '../rate-window';
import { validateProjectId } from './agent';

/** Permits per window and its length: what AGENT_RATE_LIMIT gives and an ask carries. */
export interface RateWindow {
  limit: number;
  windowMs: number;
}

/** The most permits per window (the API's is 100; benchmarks run far above it, never this high). */
export const MAX_RATE_LIMIT = 1_000_000;
/** The shortest window: shorter ones only churn timers. */
export const MIN_WINDOW_MS = 100;
/** The longest window (the API's is an hour): a grant holds its slot for two. */
export const MAX_WINDOW_MS = 86_400_000;
/** A limiter's history budget (maxHistoryEvents): at least a few rounds, below the server's 51,200 events. */
export const MIN_HISTORY_EVENTS = 10;
export const MAX_HISTORY_EVENTS = 50_000;

const UNITS: [string, number][] = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1_000],
];

const wholeIn = (value: unknown, min: number, max: number): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;

/** Milliseconds as the shortest exact unit: 3600000 -> 1h, 90000 -> 90s, 1500 -> 1500ms. */
export function formatDuration(ms: number): string {
  const [unit, size] = UNITS.find(([, size]) => ms >= size && ms % size === 0) ?? ['ms', 1];
  return `${ms / size}${unit}`;
}

/** A window as AGENT_RATE_LIMIT writes it: `100/1h`, `5/10s`, `5/1500ms`. */
export function formatRateWindow({ limit, windowMs }: RateWindow): string {
  return `${limit}/${formatDuration(windowMs)}`;
}

/** Why `window` is not a sane limit per window (each problem a sentence naming the field); empty if it is. */
export function rateWindowProblems(window: { limit?: unknown; windowMs?: unknown }): string[] {
  const problems: string[] = [];
  if (!wholeIn(window.limit, 1, MAX_RATE_LIMIT))
    problems.push(`limit must be a whole number from 1 to ${MAX_RATE_LIMIT}`);
  if (!wholeIn(window.windowMs, MIN_WINDOW_MS, MAX_WINDOW_MS))
    problems.push(`windowMs must be a whole number of milliseconds from ${MIN_WINDOW_MS} to ${MAX_WINDOW_MS} (1d)`);
  return problems;
}

/**
 * Every problem with an agentRateLimiter start (the workers' limiter client starts it with their
 * AGENT_RATE_LIMIT). A margin may only widen the default one: it covers the clocks' differences.
 */
export function limiterInputProblems(input: unknown): string[] {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    return ['input must be an object {projectId, limit, windowMs}'];
  const { projectId, limit, windowMs, marginMs, maxHistoryEvents } = input as Record<string, unknown>;
  const problems = [...validateProjectId(projectId), ...rateWindowProblems({ limit, windowMs })];
  if (marginMs !== undefined && problems.length === 0) {
    const least = defaultMarginMs(windowMs as number);
    if (!wholeIn(marginMs, least, windowMs as number))
      problems.push(`marginMs, when given, must be a whole number from ${least} to windowMs (${windowMs as number})`);
  }
  if (maxHistoryEvents !== undefined && !wholeIn(maxHistoryEvents, MIN_HISTORY_EVENTS, MAX_HISTORY_EVENTS))
    problems.push(
      `maxHistoryEvents, when given, must be a whole number from ${MIN_HISTORY_EVENTS} to ${MAX_HISTORY_EVENTS}`,
    );
  return problems;
}

/** What an ask says it was asked for, for a message: the window, or its raw value cut short. */
function describeAsked(asked: unknown): string {
  const { limit, windowMs } = (asked ?? {}) as Record<string, unknown>;
  const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
  if (finite(limit) && finite(windowMs)) return formatRateWindow({ limit, windowMs });
  return JSON.stringify(asked)?.slice(0, 80) ?? String(asked);
}

/**
 * Why a limiter enforcing `enforced` refuses an ask that names the window `asked`, or null when it is the
 * same. An ask without one (limiters' first release) names none and is answered under `enforced`.
 */
export function askWindowProblem(asked: unknown, enforced: RateWindow): string | null {
  if (asked === undefined || asked === null) return null;
  const { limit, windowMs } = asked as Record<string, unknown>;
  if (limit === enforced.limit && windowMs === enforced.windowMs) return null;
  const bounds = typeof asked === 'object' ? rateWindowProblems(asked) : [];
  const why = bounds.length > 0 ? ` (${bounds.join('; ')})` : '';
  return `asked for ${describeAsked(asked)}${why}, this limiter enforces ${formatRateWindow(enforced)}`;
}
