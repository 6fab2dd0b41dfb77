// test-lane: parallel
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ConfigError,
  DEFAULT_METRICS_PORT,
  checkAdminApiKey,
  loadWorkerConfig,
  parseRateLimit,
} from '../../src/config';

const KEY = 'mint_unit_test_key_0123456789';

describe('parseRateLimit', () => {
  test('count per window with units', () => {
    assert.deepEqual(parseRateLimit('100/1h'), { limit: 100, windowMs: 3_600_000 });
    assert.deepEqual(parseRateLimit('100/10s'), { limit: 100, windowMs: 10_000 });
    assert.deepEqual(parseRateLimit('5/500ms'), { limit: 5, windowMs: 500 });
    assert.deepEqual(parseRateLimit(' 3 / m '), { limit: 3, windowMs: 60_000 });
    assert.deepEqual(parseRateLimit('1/1.5s'), { limit: 1, windowMs: 1_500 });
    assert.deepEqual(parseRateLimit('1/1.1s'), { limit: 1, windowMs: 1_100 });
  });

  test('rejects malformed and empty budgets', () => {
    for (const text of ['', '100', '100/', '100/1x', '/1h', 'a/1h', '-1/1h', '0/1h', '1/0s']) {
      assert.throws(() => parseRateLimit(text), Error, text);
    }
  });

  test('refuses what a limiter would refuse: beyond a million per window, under 100 ms or over a day', () => {
    assert.throws(
      () => parseRateLimit('1000000000/1h'),
      /limit must be a whole number from 1 to 1000000 \(got "1000000000\/1h"\)/,
    );
    assert.throws(() => parseRateLimit('5/50ms'), /windowMs must be a whole number of milliseconds from 100/);
    assert.throws(() => parseRateLimit('5/2d'), /windowMs/);
    assert.deepEqual(parseRateLimit('1000000/1d'), { limit: 1_000_000, windowMs: 86_400_000 });
  });
});

describe('checkAdminApiKey', () => {
  test('accepts admin keys', () => {
    assert.equal(checkAdminApiKey(KEY), null);
  });

  test('names the variable and never echoes the key', () => {
    for (const key of [undefined, '', 'sk_live_secretvalue', 'mint_', 'mint_has space', 'MINT_upper']) {
      const problem = checkAdminApiKey(key);
      assert.ok(problem, `expected a problem for ${String(key)}`);
      assert.match(problem, /ADMIN_API_KEY/);
      if (key && key.length > 6) assert.ok(!problem.includes(key), 'problem must not contain the key');
    }
  });
});

describe('loadWorkerConfig', () => {
  test('defaults', () => {
    const config = loadWorkerConfig({ ADMIN_API_URL: 'http://127.0.0.1:4010', ADMIN_API_KEY: KEY });
    assert.equal(config.address, '127.0.0.1:7233');
    assert.equal(config.namespace, 'default');
    assert.equal(config.taskQueue, 'docs-admin');
    assert.deepEqual(config.agentRateLimit, { limit: 100, windowMs: 3_600_000 });
    assert.equal(config.adminApiKey, KEY);
  });

  test('reads every variable', () => {
    const config = loadWorkerConfig({
      ADMIN_API_URL: 'https://api.example.com',
      ADMIN_API_KEY: KEY,
      TEMPORAL_ADDRESS: '10.0.0.1:7233',
      TEMPORAL_NAMESPACE: 'docs',
      TEMPORAL_TASK_QUEUE: 'q',
      AGENT_RATE_LIMIT: '100/10s',
      METRICS_PORT: '0',
    });
    assert.equal(config.address, '10.0.0.1:7233');
    assert.equal(config.namespace, 'docs');
    assert.equal(config.taskQueue, 'q');
    assert.deepEqual(config.agentRateLimit, { limit: 100, windowMs: 10_000 });
    assert.equal(config.metricsPort, 0);
  });

  test('reports every problem at once, naming variables, without the key', () => {
    const badKey = 'sk_not_an_admin_key_SECRET';
    let caught: unknown;
    try {
      loadWorkerConfig({
        ADMIN_API_URL: 'ftp://x',
        ADMIN_API_KEY: badKey,
        AGENT_RATE_LIMIT: 'lots',
        METRICS_PORT: '70000',
      });
    } catch (err) {
      caught = err;
    }
    assert.ok(caught instanceof ConfigError);
    assert.equal(caught.problems.length, 4);
    assert.match(caught.message, /ADMIN_API_URL/);
    assert.match(caught.message, /ADMIN_API_KEY/);
    assert.match(caught.message, /AGENT_RATE_LIMIT/);
    assert.match(caught.message, /METRICS_PORT/);
    assert.ok(!caught.message.includes(badKey));
  });

  test('refuses URLs with credentials', () => {
    assert.throws(() => loadWorkerConfig({ ADMIN_API_URL: 'http://u:p@127.0.0.1', ADMIN_API_KEY: KEY }), /credentials/);
  });

  test('METRICS_PORT: the default (which may fall back to a free port) only when unset or empty', () => {
    const base = { ADMIN_API_URL: 'http://127.0.0.1:4010', ADMIN_API_KEY: KEY };
    for (const value of [undefined, '']) {
      const config = loadWorkerConfig({ ...base, METRICS_PORT: value });
      assert.equal(config.metricsPort, DEFAULT_METRICS_PORT);
      assert.equal(config.metricsPortIsDefault, true);
    }
    for (const value of ['9464', '9100', '0']) {
      const config = loadWorkerConfig({ ...base, METRICS_PORT: value });
      assert.equal(config.metricsPort, Number(value));
      assert.equal(config.metricsPortIsDefault, false, `METRICS_PORT=${value} is explicit`);
    }
  });

  test('TEMPORAL_ADDRESS must be host, host:port or [IPv6]:port', () => {
    const base = { ADMIN_API_URL: 'http://127.0.0.1:4010', ADMIN_API_KEY: KEY };
    for (const address of [
      '127.0.0.1:7233',
      'temporal',
      'my-ns.tmprl.cloud:7233',
      '[::1]:7233',
      'temporal_frontend:7233',
    ]) {
      assert.equal(loadWorkerConfig({ ...base, TEMPORAL_ADDRESS: address }).address, address);
    }
    for (const address of ['nonsense::x', 'http://127.0.0.1:7233', '127.0.0.1:', 'host:port', ' 127.0.0.1:7233']) {
      assert.throws(
        () => loadWorkerConfig({ ...base, TEMPORAL_ADDRESS: address }),
        /TEMPORAL_ADDRESS must be host:port/,
        address,
      );
    }
  });
});
