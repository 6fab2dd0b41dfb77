// test-lane: parallel
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readSendCheckpoint } from '../../src/policies/checkpoint';

test('readSendCheckpoint: only no details means never sent; anything unreadable counts as maybe sent', () => {
  assert.equal(readSendCheckpoint(undefined), null);
  assert.equal(readSendCheckpoint(null), null);
  assert.deepEqual(readSendCheckpoint({ something: 'else' }), { phase: 'sending' });
  assert.deepEqual(readSendCheckpoint('garbled'), { phase: 'sending' });
  assert.deepEqual(readSendCheckpoint({ phase: 'sending' }), { phase: 'sending' });
  assert.deepEqual(readSendCheckpoint({ phase: 'answered', result: { id: 'j1' } }), {
    phase: 'answered',
    result: { id: 'j1' },
  });
  assert.deepEqual(readSendCheckpoint({ phase: 'answered' }), { phase: 'sending' });
});
