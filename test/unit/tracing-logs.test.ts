// test-lane: parallel
// With tracing on, a worker log line written inside a span carries that span's trace and span ids.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '../../src/observability/logger';
import { activeTracing, inSpan, startTracing, stopTracing } from '../../src/observability/tracing';

describe('log lines and traces', () => {
  after(async () => {
    await stopTracing();
  });

  test('a line inside a span has trace_id and span_id; outside, none', async () => {
    // Nothing listens there: the spans are never exported (stopTracing resolves false).
    await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_BSP_SCHEDULE_DELAY: '60000' }, 't');
    const lines: string[] = [];
    const logger = createLogger({ logFormat: 'json', write: (line) => void lines.push(line) });
    let ids: { trace_id: string; span_id: string } | undefined;
    await inSpan('unit', {}, async () => {
      ids = activeTracing()?.traceIds();
      logger.info('inside');
    });
    logger.info('outside');
    assert.ok(ids);
    const [inside, outside] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(inside?.trace_id, ids.trace_id);
    assert.equal(inside?.span_id, ids.span_id);
    assert.equal(outside?.trace_id, undefined);
  });
});
