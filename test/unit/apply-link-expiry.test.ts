// test-lane: parallel
// applyBundle refuses a link at or near its expiry (a keeper whose verify and apply were far apart, as
// when a server node was lost between them): BundleUnavailable, non-retryable, so the keeper asks a
// fresh link; a mirror, which keeps the bytes it downloaded, is exempt.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { MIN_LINK_LIFE_MS, refuseExpiringLink } from '../../src/activities/keeper';
import type { ApplyBundleRequest } from '../../src/activities/sinks';

const NOW = Date.parse('2026-11-25T20:00:00Z');
const request = (expiresInMs: number) =>
  ({
    domain: 'docs.example.com',
    sink: 'prod-config',
    jobId: 'exp_1',
    bundleUrl: 'https://bundles.example.com/exp_1.tar.gz?sig=secret',
    expiresAt: new Date(NOW + expiresInMs).toISOString(),
    sizeBytes: 10,
    version: null,
  }) as ApplyBundleRequest;

test('a link with time left is applied', () => {
  assert.doesNotThrow(() => refuseExpiringLink(request(MIN_LINK_LIFE_MS), 'file', NOW));
  assert.doesNotThrow(() => refuseExpiringLink(request(60_000), 'file', NOW));
});

test('an expired link, or one about to expire, is refused: BundleUnavailable, non-retryable, no URL', () => {
  for (const left of [-5_000, 0, MIN_LINK_LIFE_MS - 1]) {
    assert.throws(
      () => refuseExpiringLink(request(left), 'webhook', NOW),
      (err: unknown) =>
        err instanceof ApplicationFailure &&
        err.type === 'BundleUnavailable' &&
        err.nonRetryable &&
        !err.message.includes('sig=') &&
        err.message.includes('exp_1'),
    );
  }
});

test('a mirror sink is exempt: it serves the bytes it downloaded', () => {
  assert.doesNotThrow(() => refuseExpiringLink(request(-5_000), 'mirror', NOW));
});
