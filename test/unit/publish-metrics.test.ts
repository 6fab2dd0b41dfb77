// test-lane: parallel
// The publishing metrics the DocsKeeperPublishStuck alert reads: the oldest wait per domain (cleared when
// nothing waits), the newest publish served, and the publish-to-deployment histogram.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrometheusMetrics } from '../../src/observability/prometheus';

test('waiting since, served, and the latency of a publish that reached the deployment', async () => {
  const metrics = createPrometheusMetrics({ processMetrics: false });
  const text = () => metrics.registry.metrics();
  metrics.publishWaiting('docs.example.com', 1_700_000_000_000);
  assert.match(
    await text(),
    /^docs_admin_keeper_publish_waiting_since_timestamp_seconds\{domain="docs.example.com"\} 1700000000$/m,
  );

  metrics.publishReached('docs.example.com', Date.now() - 42_000);
  metrics.publishWaiting('docs.example.com', null);
  const after = await text();
  assert.doesNotMatch(after, /^docs_admin_keeper_publish_waiting_since_timestamp_seconds\{/m, 'nothing waits');
  assert.match(after, /^docs_admin_keeper_publish_served_timestamp_seconds\{domain="docs.example.com"\} \d+/m);
  assert.match(after, /^docs_admin_keeper_publish_to_deployment_seconds_count 1$/m);
  assert.match(after, /^docs_admin_keeper_publish_to_deployment_seconds_bucket\{le="30"\} 0$/m);
  assert.match(after, /^docs_admin_keeper_publish_to_deployment_seconds_bucket\{le="45"\} 1$/m);
});
