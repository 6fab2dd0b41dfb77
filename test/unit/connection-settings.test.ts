// test-lane: parallel
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  loadTemporalConfig,
  nativeConnectionOptions,
  taskQueueOf,
  temporalConnectionOptions,
} from '../../src/connection/settings';

// No config file: HOME points nowhere, so only the variables given here count.
const env = (vars: Record<string, string>): NodeJS.ProcessEnv => ({ HOME: '/nonexistent', ...vars });

describe('Temporal connection settings (one loader for worker, client, CLI and schedules)', () => {
  test('the contract defaults, and the variables over them', () => {
    assert.deepEqual(loadTemporalConfig(env({})), {
      address: '127.0.0.1:7233',
      namespace: 'default',
      taskQueue: 'docs-admin',
    });
    assert.deepEqual(
      loadTemporalConfig(env({ TEMPORAL_ADDRESS: 't:7', TEMPORAL_NAMESPACE: 'ns', TEMPORAL_TASK_QUEUE: 'q' })),
      {
        address: 't:7',
        namespace: 'ns',
        taskQueue: 'q',
      },
    );
  });

  test('a starter task queue: the option, else TEMPORAL_TASK_QUEUE, else docs-admin', () => {
    assert.equal(taskQueueOf('mine', env({ TEMPORAL_TASK_QUEUE: 'q' })), 'mine');
    assert.equal(taskQueueOf(undefined, env({ TEMPORAL_TASK_QUEUE: 'q' })), 'q');
    assert.equal(taskQueueOf('', env({})), 'docs-admin');
  });

  test('envconfig supplies the API key (with TLS), gRPC metadata and the address', () => {
    const options = temporalConnectionOptions(
      env({
        TEMPORAL_ADDRESS: 'temporal.example.com:7233',
        TEMPORAL_API_KEY: 'secret',
        TEMPORAL_GRPC_META_X_TEAM: 'docs',
      }),
    );
    assert.equal(options.address, 'temporal.example.com:7233');
    assert.equal(options.apiKey, 'secret');
    assert.equal(options.tls, true);
    assert.deepEqual(options.metadata, { 'x-team': 'docs' });
    assert.equal(temporalConnectionOptions(env({})).address, '127.0.0.1:7233');
  });

  test("the worker's native connection carries the same settings at the worker's address", () => {
    assert.deepEqual(nativeConnectionOptions(env({ TEMPORAL_API_KEY: 'secret' }), 'w:1'), {
      address: 'w:1',
      apiKey: 'secret',
      tls: true,
    });
    assert.deepEqual(nativeConnectionOptions(env({}), 'w:1'), { address: 'w:1' });
  });
});
