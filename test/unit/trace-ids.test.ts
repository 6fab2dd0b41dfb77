// test-lane: parallel
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatTraceparent, parseTraceparent, workflowSpanId, workflowTraceId } from '../../src/shared/trace-ids';

const RUN = '3fcf8620-57e8-4179-8f81-7bd8b7ed5004';

describe('trace ids of workflow spans', () => {
  test('span ids: 16 hex digits, the same for the same run and counter (a replay), distinct otherwise', () => {
    const ids = Array.from({ length: 1000 }, (_, i) => workflowSpanId(RUN, i + 1));
    for (const id of ids) assert.match(id, /^[0-9a-f]{16}$/);
    assert.equal(new Set(ids).size, ids.length);
    assert.equal(workflowSpanId(RUN, 7), ids[6]);
    assert.notEqual(workflowSpanId('another-run', 7), ids[6]);
  });
  test('a root trace id is the run id without dashes; a run id that is no UUID still gets 32 hex digits', () => {
    assert.equal(workflowTraceId(RUN), '3fcf862057e841798f817bd8b7ed5004');
    assert.match(workflowTraceId('not-a-uuid'), /^[0-9a-f]{32}$/);
  });
  test('traceparent parses and formats back; the sampled flag is bit 0', () => {
    const value = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const parsed = parseTraceparent(value);
    assert.deepEqual(parsed, {
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      sampled: true,
    });
    assert.equal(formatTraceparent(parsed!), value);
    assert.equal(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00')?.sampled, false);
    assert.equal(parseTraceparent(42), undefined);
  });
});
