// Live progress for `--wait` on stderr: a cli-progress bar (percent and pages) for exports and a
// rewritten status line for agent jobs when stderr is a terminal; plain, rate-limited lines otherwise
// (CI logs, pipes), so a log never fills with redraws, and at least one every KEEP_ALIVE_MS even when
// no status comes (a job whose workflow task is busy or failing answers no query), so a log that stops
// means the command stopped.
import cliProgress from 'cli-progress';
import type { AgentStatus } from '../shared/agent-job';
import type { ExportStatus } from '../shared/static-export';

export interface ProgressStream {
  write(chunk: string): boolean;
  isTTY?: boolean;
}

/** On a stream that is not a terminal, a waiting command prints at least one line this often. */
export const KEEP_ALIVE_MS = 30_000;

export interface Reporter<S> {
  update(status: S): void;
  /**
   * Called while waiting, every second or so: on a stream that is not a terminal, prints where the job
   * stands when no line was printed for keepAliveMs; `problem` says why no status came lately.
   */
  tick(problem?: string): void;
  /** Stops the bar or line; call before printing anything else. */
  stop(): void;
}

export interface ReporterOptions {
  /** Minimum time between two plain lines (default 2000 ms); a phase change prints at once. */
  plainIntervalMs?: number;
  /** Longest time without a line on a stream that is not a terminal (default KEEP_ALIVE_MS). */
  keepAliveMs?: number;
  now?: () => number;
}

function elapsed(ms: number): string {
  const s = Math.floor(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/**
 * The line a quiet wait prints: the last status again (its text made now), or that none came yet, with
 * how long no status has come and why when that is longer than the keep-alive interval.
 */
export function keepAliveLine(
  label: string,
  last: { text: string; atMs: number } | undefined,
  startedMs: number,
  nowMs: number,
  problem: string | undefined,
  keepAliveMs = KEEP_ALIVE_MS,
): string {
  const why = problem ? `: ${problem}` : '';
  if (!last) return `${label}: no status yet, ${elapsed(nowMs - startedMs)} elapsed${why}`;
  const stale = nowMs - last.atMs >= keepAliveMs ? ` (no status for ${elapsed(nowMs - last.atMs)}${why})` : '';
  return `${last.text}${stale}`;
}

/** Plain lines on a stream that is not a terminal: the reporters' rate limit and keep-alive in one place. */
class PlainLines<S> {
  private readonly started: number;
  private lastAt: number;
  private last: { status: S; atMs: number } | undefined;
  private printed = { line: '', key: '', atMs: -Infinity };

  constructor(
    private readonly stream: ProgressStream,
    private readonly label: string,
    private readonly text: (status: S) => string,
    private readonly now: () => number,
    private readonly keepAliveMs = KEEP_ALIVE_MS,
  ) {
    this.started = now();
    this.lastAt = this.started;
  }

  /**
   * A status came: kept for the keep-alive line, and printed when its `key` changed or `intervalMs`
   * passed since the last one printed, never the same line twice in a row.
   */
  seen(status: S, key: string, intervalMs: number): void {
    this.last = { status, atMs: this.now() };
    const line = this.text(status);
    const t = this.now();
    if (line === this.printed.line || (key === this.printed.key && t - this.printed.atMs < intervalMs)) return;
    this.printed = { line, key, atMs: t };
    this.write(line);
  }

  tick(problem?: string): void {
    const t = this.now();
    if (t - this.lastAt < this.keepAliveMs) return;
    const last = this.last && { text: this.text(this.last.status), atMs: this.last.atMs };
    this.write(keepAliveLine(this.label, last, this.started, t, problem, this.keepAliveMs));
  }

  private write(line: string): void {
    this.stream.write(`${line}\n`);
    this.lastAt = this.now();
  }
}

export function exportReporter(
  stream: ProgressStream,
  domain: string,
  options: ReporterOptions = {},
): Reporter<ExportStatus> {
  const now = options.now ?? Date.now;
  if (stream.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        stream: stream as NodeJS.WritableStream,
        format: `export ${domain} [{bar}] {percentage}% | {pages} pages | {phase}`,
        hideCursor: true,
        clearOnComplete: false,
        forceRedraw: true,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(100, 0, { pages: 0, phase: 'starting' });
    return {
      update(status) {
        bar.update(Math.max(0, Math.min(100, Math.round(status.progress))), {
          pages: status.pageCount,
          phase: status.phase,
        });
      },
      tick() {},
      stop() {
        bar.stop();
      },
    };
  }
  const text = (status: ExportStatus) =>
    `export ${domain}: ${status.phase} ${Math.round(status.progress)}% (${status.pageCount} pages)`;
  const lines = new PlainLines(stream, `export ${domain}`, text, now, options.keepAliveMs);
  return {
    update: (status) => lines.seen(status, status.phase, options.plainIntervalMs ?? 2_000),
    tick: (problem) => lines.tick(problem),
    stop() {},
  };
}

export function agentReporter(
  stream: ProgressStream,
  jobLabel: string,
  options: ReporterOptions = {},
): Reporter<AgentStatus> {
  const now = options.now ?? Date.now;
  const started = now();
  let drawn = false;
  const text = (status: AgentStatus) =>
    `agent job ${status.jobId ?? jobLabel}: ${status.phase}${status.status ? ` (${status.status})` : ''}, ` +
    `${elapsed(now() - started)} elapsed, ${status.polls} polls` +
    (status.waitingFor ? `; waiting for ${status.waitingFor}` : '');
  const lines = new PlainLines(stream, `agent job ${jobLabel}`, text, now, options.keepAliveMs);
  return {
    update(status) {
      if (stream.isTTY) {
        stream.write(`\r\x1b[K${text(status)}`);
        drawn = true;
        return;
      }
      const key = `${status.phase}/${status.status}/${status.waitingFor ?? ''}`;
      lines.seen(status, key, options.plainIntervalMs ?? 10_000);
    },
    tick: (problem) => {
      if (!stream.isTTY) lines.tick(problem);
    },
    stop() {
      if (drawn) stream.write('\n');
      drawn = false;
    },
  };
}

/**
 * Awaits `wait` while `reporter` shows its progress, ticked every second (a failed status query's reason
 * goes into the keep-alive lines until a status comes); shows `done` of the result and the last status
 * seen, then stops the reporter.
 */
export async function waitReporting<S, R>(
  reporter: Reporter<S>,
  wait: (progress: { onProgress(status: S): void; onProgressError(err: unknown): void }) => Promise<R>,
  done: (result: R, last: S | undefined) => S,
  intervalMs = 1_000,
): Promise<R> {
  let problem: string | undefined;
  let last: S | undefined;
  const timer = setInterval(() => reporter.tick(problem), intervalMs);
  timer.unref();
  try {
    const result = await wait({
      onProgress(status) {
        problem = undefined;
        last = status;
        reporter.update(status);
      },
      onProgressError(err) {
        problem = `its status query did not answer (${err instanceof Error ? err.message : String(err)})`;
      },
    });
    reporter.update(done(result, last));
    return result;
  } finally {
    clearInterval(timer);
    reporter.stop();
  }
}
