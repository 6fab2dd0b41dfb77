// Heartbeat tuning of the admin API activities, shared by the workflows (timeouts) and the activities (keep-alive).

/**
 * Heartbeat timeout of the admin API activities. The server marks a task started when it hands it to
 * a poller; on a loaded cluster a few of those never reached the worker, and waited out their whole
 * start-to-close timeout (60 s) before a retry. With a heartbeat timeout the retry comes after this
 * instead, while the worker keeps every attempt it does run alive (ACTIVITY_KEEP_ALIVE_MS).
 */
export const ACTIVITY_HEARTBEAT_TIMEOUT_MS = 10_000;
/** How often a running activity attempt heartbeats: well inside ACTIVITY_HEARTBEAT_TIMEOUT_MS, and never for one shorter than this. */
export const ACTIVITY_KEEP_ALIVE_MS = 3_000;
