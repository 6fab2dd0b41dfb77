// One keep-alive for every activity attempt. API activities run under a short heartbeat timeout
// (src/shared/heartbeat.ts) so that a task lost on its way to a worker is retried in seconds; an
// attempt that does run is kept alive here, by the worker's activity interceptor, repeating the last
// progress the attempt recorded (an empty heartbeat would erase it from the Web UI's pending activity).
import { Context } from '@temporalio/activity';
import { ACTIVITY_KEEP_ALIVE_MS } from '../shared/heartbeat';

const lastProgress = new WeakMap<Context, unknown>();

/** Inside an activity, records `details` as the attempt's heartbeat; outside one (a direct call), nothing. */
export function recordProgress(details: unknown): void {
  let ctx: Context;
  try {
    ctx = Context.current();
  } catch {
    return;
  }
  lastProgress.set(ctx, details);
  ctx.heartbeat(details);
}

/**
 * Heartbeats the attempt every ACTIVITY_KEEP_ALIVE_MS (a third of a shorter heartbeat timeout) with
 * its last recorded progress until the returned function is called. Local activities and attempts
 * without a heartbeat timeout need none; `exempt` ones heartbeat through the client themselves.
 */
export function keepAttemptAlive(ctx: Context, exempt: ReadonlySet<string>): () => void {
  const { heartbeatTimeoutMs, isLocal, activityType } = ctx.info;
  if (isLocal || !heartbeatTimeoutMs || exempt.has(activityType)) return () => undefined;
  const everyMs = Math.min(ACTIVITY_KEEP_ALIVE_MS, heartbeatTimeoutMs / 3);
  const timer = setInterval(() => ctx.heartbeat(lastProgress.get(ctx)), everyMs);
  return () => clearInterval(timer);
}
