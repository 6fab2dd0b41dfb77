// The bundle keeper's activities, its publishing rounds' (./publishing.ts) included: one proxy per timeout profile.
import { proxyActivities } from '@temporalio/workflow';
import type { ExportActivities } from '../activities/export';
import type { KeeperActivities } from '../activities/keeper';
import type { PublishingActivities } from '../activities/publishing';
import { ACTIVITY_HEARTBEAT_TIMEOUT_MS } from '../shared/heartbeat';

/**
 * Short calls: the sink's check, a fresh bundle link, a deployment update's trigger and polls. A 429 comes
 * with Retry-After (nextRetryDelay): the trigger waits for the organization's window.
 */
export const api = proxyActivities<
  Pick<KeeperActivities, 'resolveSink'> & Pick<ExportActivities, 'generateBundle'> & PublishingActivities
>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: ACTIVITY_HEARTBEAT_TIMEOUT_MS,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5 },
});

// Verify downloads the whole archive; a sink may run `helm upgrade` or copy the archive (mirror): long,
// heartbeating (progress, or the attempt keeping itself alive), so a task lost on its way to the worker is
// retried after the heartbeat timeout, not after 15 minutes. Content problems are non-retryable (BundleInvalid).
export const installer = proxyActivities<Pick<KeeperActivities, 'verifyBundle' | 'applyBundle'>>({
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: ACTIVITY_HEARTBEAT_TIMEOUT_MS,
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 3 },
});
