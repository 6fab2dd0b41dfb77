// test-lane: parallel
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { validateTraceparent } from '../../src/shared/trace-ids';
import {
  TracingConfigError,
  activeTracing,
  startTracing,
  tracesEndpoint,
  tracingProtocol,
  tracingWanted,
} from '../../src/observability/tracing';

const ROOT = path.resolve(__dirname, '../..');
/** The OpenTelemetry SDK's modules and ours that loads them (src/observability/tracing-sdk.ts). */
const SDK_MODULE = /sdk-trace|exporter-trace-otlp|tracing-sdk/;

describe('tracingWanted', () => {
  test('off when no OTEL variable is set, and no OpenTelemetry SDK module is loaded', async () => {
    assert.equal(tracingWanted({}), false);
    assert.equal(tracingWanted({ OTEL_SERVICE_NAME: ' ' }), false);
    assert.equal(await startTracing({}, 'test'), undefined);
    assert.equal(activeTracing(), undefined);
    // In a process of its own: this file may share one with files that do load the SDK (scripts/test-batch.ts).
    const probe = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        `require('./src/observability/tracing').startTracing({}, 'test').then(() =>
           console.log(JSON.stringify(Object.keys(require.cache).filter((m) => ${SDK_MODULE}.test(m)))))`,
      ],
      { cwd: ROOT, env: { PATH: process.env.PATH }, encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(probe.status, 0, probe.stderr);
    assert.deepEqual(JSON.parse(probe.stdout), []);
  });
  test('on with any of the standard variables', () => {
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }), true);
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' }), true);
    assert.equal(tracingWanted({ OTEL_SERVICE_NAME: 'docs' }), true);
    assert.equal(tracingWanted({ OTEL_TRACES_SAMPLER: 'always_on' }), true);
    assert.equal(tracingWanted({ OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod' }), true);
  });
  test('OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn it off', () => {
    assert.equal(tracingWanted({ OTEL_SERVICE_NAME: 'docs', OTEL_SDK_DISABLED: 'true' }), false);
    assert.equal(tracingWanted({ OTEL_SERVICE_NAME: 'docs', OTEL_TRACES_EXPORTER: 'none' }), false);
  });
});

describe('tracingProtocol', () => {
  test('http/protobuf by default, http/json when asked, the traces variable first', () => {
    assert.equal(tracingProtocol({}), 'http/protobuf');
    assert.equal(tracingProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }), 'http/json');
    assert.equal(
      tracingProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }),
      'http/json',
    );
  });
  test('grpc is refused with the variable named', () => {
    assert.throws(
      () => tracingProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
      (err: Error) => err instanceof TracingConfigError && /OTEL_EXPORTER_OTLP_PROTOCOL=grpc/.test(err.message),
    );
  });
});

describe('tracesEndpoint', () => {
  test('the base endpoint gets /v1/traces; the traces endpoint is used as given', () => {
    assert.equal(tracesEndpoint({}), 'http://localhost:4318/v1/traces');
    assert.equal(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' }), 'http://c:4318/v1/traces');
    assert.equal(
      tracesEndpoint({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t/x',
      }),
      'http://t/x',
    );
  });
  test('a bad URL is one clear error', () => {
    assert.throws(() => tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }), /http:\/\/ or https:\/\//);
    assert.throws(() => tracesEndpoint({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' }), /not a URL/);
  });
});

describe('validateTraceparent', () => {
  test('accepts a W3C traceparent', () => {
    assert.deepEqual(validateTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'), []);
  });
  test('refuses malformed, version ff and all-zero ids, in one line', () => {
    for (const bad of [
      '4bf92f3577b34da6a3ce929d0e0e4736',
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
      `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`,
    ]) {
      assert.equal(validateTraceparent(bad).length, 1, bad);
    }
  });
});
