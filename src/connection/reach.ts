// Whether a Temporal server answers at an address, and the one-line reason when it does not.
import net from 'node:net';

/** Thrown by connectClient and the worker when no Temporal server answers. */
export class TemporalUnreachableError extends Error {
  override readonly name = 'TemporalUnreachableError';
  constructor(
    readonly address: string,
    options?: { cause?: unknown; reason?: string },
  ) {
    super(options?.reason ?? unreachableMessage(address, options?.cause), { cause: options?.cause });
  }
}

/** One-line reason for a failed connection, naming the address and what to do. */
export function unreachableMessage(address: string, cause?: unknown): string {
  const raw = cause instanceof Error ? cause.message : '';
  const detail = /connection refused|ECONNREFUSED/i.test(raw)
    ? 'connection refused'
    : /timed? ?out|deadline/i.test(raw)
      ? 'timed out'
      : /dns|ENOTFOUND|resolve/i.test(raw)
        ? 'host not found'
        : raw.split('\n')[0]?.slice(0, 160) || undefined;
  return (
    `cannot reach the Temporal server at ${address}` +
    (detail ? ` (${detail})` : '') +
    '; start one with `npm run server` or set TEMPORAL_ADDRESS'
  );
}

/** Splits host:port, [v6]:port or a bare host (port 7233). */
export function splitAddress(address: string): { host: string; port: number } {
  const match = /^\[([^\]]+)\](?::(\d+))?$/.exec(address) ?? /^([^:]+)(?::(\d+))?$/.exec(address);
  if (!match) throw new TemporalUnreachableError(address, { cause: new Error('TEMPORAL_ADDRESS must be host:port') });
  return { host: match[1] as string, port: match[2] ? Number(match[2]) : 7233 };
}

export async function probeTcp(address: string, timeoutMs: number): Promise<void> {
  const { host, port } = splitAddress(address);
  await new Promise<void>((resolve, reject) => {
    const socket = net.connect({ host, port });
    const fail = (err: Error) => {
      socket.destroy();
      reject(new TemporalUnreachableError(address, { cause: err }));
    };
    socket.setTimeout(timeoutMs, () => fail(new Error(`connect timed out after ${timeoutMs}ms`)));
    socket.once('error', fail);
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
  });
}
