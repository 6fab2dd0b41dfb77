// Live progress for `--wait` on stderr: a cli-progress bar (percent and pages) for exports and a
// rewritten status line for agent jobs when stderr is a terminal; plain, rate-limited lines otherwise
// (CI logs, pipes), so a log never fills with redraws.
import cliProgress from 'cli-progress';
import type { AgentStatus } from '../shared/agent-job';
import type { ExportStatus } from '../shared/static-export';

export interface ProgressStream {
  write(chunk: string): boolean;
  isTTY?: boolean;
}

export interface Reporter<S> {
  update(status: S): void;
  /** Stops the bar or line; call before printing anything else. */
  stop(): void;
}

export interface ReporterOptions {
  /** Minimum time between two plain lines (default 2000 ms); a phase change prints at once. */
  plainIntervalMs?: number;
  now?: () => number;
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
      stop() {
        bar.stop();
      },
    };
  }
  let lastLine = '';
  let lastPhase = '';
  let lastAt = -Infinity;
  return {
    update(status) {
      const line = `export ${domain}: ${status.phase} ${Math.round(status.progress)}% (${status.pageCount} pages)`;
      const t = now();
      if (line === lastLine) return;
      if (status.phase === lastPhase && t - lastAt < (options.plainIntervalMs ?? 2_000)) return;
      stream.write(`${line}\n`);
      lastLine = line;
      lastPhase = status.phase;
      lastAt = t;
    },
    stop() {},
  };
}

function elapsed(ms: number): string {
  const s = Math.floor(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

export function agentReporter(
  stream: ProgressStream,
  jobLabel: string,
  options: ReporterOptions = {},
): Reporter<AgentStatus> {
  const now = options.now ?? Date.now;
  const started = now();
  let lastPhase = '';
  let lastAt = -Infinity;
  let drawn = false;
  const text = (status: AgentStatus) =>
    `agent job ${status.jobId ?? jobLabel}: ${status.phase}${status.status ? ` (${status.status})` : ''}, ${elapsed(now() - started)} elapsed, ${status.polls} polls`;
  return {
    update(status) {
      if (stream.isTTY) {
        stream.write(`\r\x1b[K${text(status)}`);
        drawn = true;
        return;
      }
      const key = `${status.phase}/${status.status}`;
      const t = now();
      if (key === lastPhase && t - lastAt < (options.plainIntervalMs ?? 10_000)) return;
      stream.write(`${text(status)}\n`);
      lastPhase = key;
      lastAt = t;
    },
    stop() {
      if (drawn) stream.write('\n');
      drawn = false;
    },
  };
}
