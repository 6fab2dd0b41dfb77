// test-lane: parallel
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_RETRY_AFTER_MS, parseRetryAfter } from '../../src/api/retry-after';

const NOW = Date.parse('2025-06-01T12:00:00.000Z');

describe('parseRetryAfter', () => {
  test('delta-seconds', () => {
    assert.equal(parseRetryAfter('0', NOW), 0);
    assert.equal(parseRetryAfter('1', NOW), 1_000);
    assert.equal(parseRetryAfter(' 120 ', NOW), 120_000);
    assert.equal(parseRetryAfter('1.5', NOW), 1_500);
  });

  test('HTTP-date (IMF-fixdate and obsolete forms), relative to now', () => {
    assert.equal(parseRetryAfter('Sun, 01 Jun 2025 12:00:30 GMT', NOW), 30_000);
    assert.equal(parseRetryAfter('Sunday, 01-Jun-25 12:01:00 GMT', NOW), 60_000);
    assert.equal(parseRetryAfter('Sun Jun  1 12:00:10 2025', NOW), 10_000);
    assert.equal(parseRetryAfter(new Date(NOW + 5_000).toUTCString(), NOW), 5_000);
  });

  test('dates in the past give 0', () => {
    assert.equal(parseRetryAfter('Sun, 01 Jun 2025 11:00:00 GMT', NOW), 0);
  });

  test('clamped to one hour', () => {
    assert.equal(parseRetryAfter('86400', NOW), MAX_RETRY_AFTER_MS);
    assert.equal(parseRetryAfter('Mon, 01 Jun 2026 12:00:00 GMT', NOW), MAX_RETRY_AFTER_MS);
    assert.equal(parseRetryAfter('9'.repeat(400), NOW), MAX_RETRY_AFTER_MS);
  });

  test('absent or garbage gives undefined', () => {
    for (const value of [
      undefined,
      '',
      '   ',
      '-5',
      'soon',
      '1e3',
      'NaN',
      'Infinity',
      '12abc',
      'June 2025',
      'Sun, 99 Jun 2025 99:99:99 GMT',
    ]) {
      assert.equal(parseRetryAfter(value, NOW), undefined, `value ${JSON.stringify(value)}`);
    }
  });
});
