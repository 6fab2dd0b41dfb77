// What activities need from their host process, injected by the worker and by tests.
import type { Client } from '@temporalio/client';
import type { AdminApi } from '../api/types';
import type { RateLimit } from '../config';
import type { MetricsRecorder } from '../metrics';

export interface ActivityDeps {
  api: AdminApi;
  metrics: MetricsRecorder;
  /** Used to reach the per-project rate limiter workflow (signal-with-start). */
  temporal: Client;
  /** Task queue the limiter workflows start on (the worker serves limiterTaskQueue(taskQueue)); default: the activity's own. */
  limiterTaskQueue?: string;
  /** AGENT_RATE_LIMIT of this worker, handed to the limiter workflow when it starts. */
  agentRateLimit: RateLimit;
  /** Largest prompt accepted (characters); the API publishes none, so it is ours to choose. */
  maxPromptLength?: number;
}
