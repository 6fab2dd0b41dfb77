// The worker's start errors, and the one line every worker failure is logged as.
import { TemporalUnreachableError } from '../connection';

/** A failed start whose message says what to fix, on one line. */
export class WorkerStartError extends Error {
  override readonly name: string = 'WorkerStartError';
}

/** The Prometheus endpoint could not listen where METRICS_PORT / METRICS_HOST say. */
export class MetricsListenError extends WorkerStartError {
  override readonly name = 'MetricsListenError';
  constructor(
    readonly host: string,
    readonly port: number,
    options: { cause: unknown },
  ) {
    const code = (options.cause as NodeJS.ErrnoException).code;
    const why =
      code === 'EADDRINUSE'
        ? 'is already in use (another worker on this host?); choose another METRICS_PORT, 0 to disable metrics, or unset it to use a free port'
        : code === 'EACCES'
          ? 'needs privileges (a port below 1024); choose another METRICS_PORT'
          : code === 'EADDRNOTAVAIL'
            ? 'is not an address of this host; check METRICS_HOST'
            : `cannot be bound (${(options.cause as Error).message})`;
    super(`METRICS_PORT=${port}: metrics endpoint ${host}:${port} ${why}`, options);
  }
}

/** One line: our own start errors speak for themselves; others keep their name (TransportError: ...). */
export function errorLine(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const ours = err instanceof TemporalUnreachableError || err instanceof WorkerStartError;
  return `${ours || err.name === 'Error' ? '' : `${err.name}: `}${err.message.split('\n')[0]}`;
}
