// Retry-After (RFC 9110 section 10.2.3): delta-seconds or an HTTP-date. Pure, so it is unit-tested.

/** Upper bound for a server-requested delay; anything longer is clamped to it. */
export const MAX_RETRY_AFTER_MS = 60 * 60 * 1000;

/**
 * Milliseconds to wait according to a Retry-After header value, clamped to [0, 1h]; undefined when
 * the header is absent or unparseable. Dates in the past give 0.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(text)) {
    // delta-seconds (fractions are not in the RFC but cost nothing to accept)
    ms = Number(text) * 1000;
  } else {
    // All three HTTP-date forms (IMF-fixdate, RFC 850, asctime) name a month and carry hh:mm:ss;
    // requiring both keeps Date.parse's leniency ("1", "-5", "soon 2") from turning garbage into a date.
    if (!/(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)/i.test(text) || !/\d{1,2}:\d{2}:\d{2}/.test(text))
      return undefined;
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    ms = at - nowMs;
  }
  if (Number.isNaN(ms)) return undefined;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, Math.ceil(ms)));
}
