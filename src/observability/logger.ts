// The worker's log lines: one per entry, text or JSON, with every secret (the admin key) redacted.
import { DefaultLogger, type LogEntry, type Logger } from '@temporalio/worker';
import { redact } from '../api/credentials';
import type { LogLevelName } from '../config';
import { activeTracing } from './tracing';

export interface LoggerOptions {
  logLevel?: LogLevelName;
  logFormat?: 'text' | 'json';
  /** Strings that must never appear in a log line (the admin key). */
  secrets?: readonly string[];
  /** Where log lines go (default process.stderr). */
  write?: (line: string) => void;
}

function safeJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'bigint') return v.toString();
    if (v instanceof Error) return { name: v.name, message: v.message };
    return v;
  });
}

/**
 * The limiter worker serves workflows only, so the SDK warns at every start that it polls no activity
 * tasks. That is the design, not a problem: the line would only teach operators to ignore warnings.
 */
function isExpectedLimiterWarning(entry: LogEntry): boolean {
  const taskQueue = entry.meta?.taskQueue;
  return (
    entry.level === 'WARN' &&
    entry.message.startsWith('No activities registered') &&
    typeof taskQueue === 'string' &&
    taskQueue.endsWith('-limiter')
  );
}

/**
 * The entry's meta, with the ids of the span active here when tracing is on (a log search leads to the
 * trace). Workflow and activity lines carry theirs already, from Temporal's tracing interceptors.
 */
function withTraceIds(meta: LogEntry['meta']): LogEntry['meta'] {
  const ids = meta?.trace_id === undefined ? activeTracing()?.traceIds() : undefined;
  const merged = ids ? { ...meta, ...ids } : meta;
  return merged && Object.keys(merged).length > 0 ? merged : undefined;
}

/** A logger that writes one line per entry, text or JSON, never containing any of `secrets`. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const secrets = options.secrets ?? [];
  const write = options.write ?? ((line: string) => void process.stderr.write(line));
  const format = options.logFormat ?? 'text';
  return new DefaultLogger(options.logLevel ?? 'INFO', (entry: LogEntry) => {
    if (isExpectedLimiterWarning(entry)) return;
    const time = new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString();
    const meta = withTraceIds(entry.meta);
    const line =
      format === 'json'
        ? safeJson({ time, level: entry.level, msg: entry.message, ...meta })
        : `${time} ${entry.level.padEnd(5)} ${entry.message}${meta ? ` ${safeJson(meta)}` : ''}`;
    write(`${redact(line, secrets)}\n`);
  });
}
