// What activities need from their host process, injected by the worker and by tests.
import type { Client } from '@temporalio/client';
import type { AdminApi } from '../api/types';
import type { RateLimit } from '../config';
import type { HostRule } from '../policies/bundle-hosts';
import type { MetricsRecorder } from '../observability/metrics';
import type { SinkSource } from './sinks-file';

export interface ActivityDeps {
  api: AdminApi;
  metrics: MetricsRecorder;
  /** Asks the project's rate limiter (update-with-start) and records send checkpoints (heartbeats). */
  temporal: Client;
  /** Task queue the limiter workflows run on, served by this worker (the worker sets LIMITER_TASK_QUEUE); default: the activity's own. */
  limiterTaskQueue?: string;
  /** How long an ask waits for the limiter's answer (default LIMITER_ANSWER_TIMEOUT_MS). */
  limiterAnswerTimeoutMs?: number;
  /** AGENT_RATE_LIMIT of this worker, handed to the limiter workflow when it starts. */
  agentRateLimit: RateLimit;
  /** Where bundle links may be downloaded from (bundleHostRules: the admin API's host, then BUNDLE_ALLOWED_HOSTS). */
  bundleHosts: readonly HostRule[];
  /** The worker's sinks file (KEEPER_SINKS_FILE); default none: every keeper's sink is refused. */
  sinks?: SinkSource;
  /** Largest prompt accepted (characters); the API publishes none, so it is ours to choose. */
  maxPromptLength?: number;
}
