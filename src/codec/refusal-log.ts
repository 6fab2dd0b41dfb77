// One log line per kind of refusal at most once a minute: a scanner or a browser with an expired
// session would otherwise fill the log with the same line. The line names the kind, the count and
// where from; never the token.

export const REFUSAL_LOG_INTERVAL_MS = 60_000;

/** A logger of refusals keyed by class; `now` is injectable for the unit test. */
export function refusalLogger(
  log: (line: string) => void,
  now: () => number = Date.now,
  intervalMs = REFUSAL_LOG_INTERVAL_MS,
): (refusal: string, detail: string) => void {
  const last = new Map<string, { at: number; suppressed: number }>();
  return (refusal, detail) => {
    const seen = last.get(refusal);
    const at = now();
    if (seen !== undefined && at - seen.at < intervalMs) {
      seen.suppressed += 1;
      return;
    }
    const more = seen?.suppressed ? ` (${seen.suppressed} more since the last line)` : '';
    last.set(refusal, { at, suppressed: 0 });
    log(`codec-server: refused (${refusal}): ${detail}${more}`);
  };
}
