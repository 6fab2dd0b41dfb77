// When the bundle keeper refreshes a link and how it backs off after a failure. Pure arithmetic on
// milliseconds, unit-tested in test/unit/keeper-schedule.test.ts; the workflow feeds it workflow time.
import type { RefreshMargin } from '../shared/bundle-keeper';

export const DEFAULT_REFRESH_FRACTION = 0.1;
export const DEFAULT_REFRESH_MIN_MS = 60_000;

/** Every problem with a refresh margin option; empty when valid (or absent). */
export function refreshMarginProblems(margin: RefreshMargin | undefined): string[] {
  if (margin === undefined || margin === null) return [];
  if (typeof margin !== 'object') return ['refreshMargin must be an object {fraction?, minMs?}'];
  const problems: string[] = [];
  const { fraction, minMs } = margin;
  if (fraction !== undefined && !(typeof fraction === 'number' && fraction >= 0 && fraction < 1)) {
    problems.push('refreshMargin.fraction must be a number in [0, 1)');
  }
  if (minMs !== undefined && !(typeof minMs === 'number' && Number.isFinite(minMs) && minMs >= 0)) {
    problems.push('refreshMargin.minMs must be a non-negative number of milliseconds');
  }
  return problems;
}

/**
 * How long before expiry to refresh a link that lives `lifetimeMs`: fraction x lifetime, at least minMs.
 * The minMs floor never pushes the refresh before the middle of the lifetime: with links shorter-lived
 * than twice minMs the keeper refreshes at half-life instead of continuously (still well before expiry).
 */
export function refreshMarginMs(lifetimeMs: number, margin: RefreshMargin = {}): number {
  const fraction = margin.fraction ?? DEFAULT_REFRESH_FRACTION;
  const minMs = margin.minMs ?? DEFAULT_REFRESH_MIN_MS;
  const lifetime = Math.max(0, lifetimeMs);
  const proportional = fraction * lifetime;
  return Math.min(Math.max(minMs, proportional), Math.max(proportional, lifetime / 2));
}

/**
 * The moment (ms) to generate a fresh link for a link issued at `issuedAtMs` that expires at
 * `expiresAtMs`: expiry minus the margin, but never before the link was issued (an already expired
 * link is refreshed at once).
 */
export function refreshAtMs(issuedAtMs: number, expiresAtMs: number, margin: RefreshMargin = {}): number {
  const marginMs = refreshMarginMs(expiresAtMs - issuedAtMs, margin);
  return Math.max(issuedAtMs, expiresAtMs - marginMs);
}

export interface RetryBackoff {
  /** First retry delay. */
  baseMs?: number;
  /** Largest delay. */
  maxMs?: number;
}

export const DEFAULT_RETRY_BACKOFF: Required<RetryBackoff> = { baseMs: 15_000, maxMs: 10 * 60_000 };

/**
 * Delay before the next attempt after `failures` consecutive failures (1 = the first failure):
 * exponential from baseMs up to maxMs. When a live link is at stake (`untilExpiryMs` given), the delay
 * is also at most a quarter of the time left, so several attempts still fit before the link expires
 * (but never below one second, to avoid a hot loop).
 */
export function retryDelayMs(failures: number, untilExpiryMs?: number, backoff: RetryBackoff = {}): number {
  const { baseMs, maxMs } = { ...DEFAULT_RETRY_BACKOFF, ...backoff };
  const n = Math.max(1, Math.floor(failures));
  let delay = Math.min(maxMs, baseMs * 2 ** Math.min(n - 1, 30));
  if (untilExpiryMs !== undefined) delay = Math.min(delay, Math.max(1_000, untilExpiryMs / 4));
  return Math.max(1_000, Math.round(delay));
}
