// test-lane: parallel
// The pure parts of `keys in-use`: key ids found in the server's messages, and which keys may go.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { keyIdsIn, type KeyUsageReport } from '../../src/client/key-usage';
import { encryptPayload, parseKeyFile } from '../../src/codec';
import { unusedKeys } from '../../src/cli/commands/keys';

const key = (n: number) => Buffer.alloc(32, n);
const sealed = (id: string) => encryptPayload(defaultPayloadConverter.toPayload({ secret: id }), id, key(1));

test('keyIdsIn finds the key id of every encrypted payload, at any depth, in a history as the server sends it', () => {
  const history = temporal.api.history.v1.History.decode(
    temporal.api.history.v1.History.encode({
      events: [
        {
          workflowExecutionStartedEventAttributes: {
            input: { payloads: [sealed('k1')] },
            memo: { fields: { note: sealed('k2') } },
            searchAttributes: { indexedFields: { DocsDomain: defaultPayloadConverter.toPayload('d.example.com') } },
          },
        },
        { activityTaskCompletedEventAttributes: { result: { payloads: [sealed('k1')] } } },
      ],
    }).finish(),
  );
  assert.deepEqual([...keyIdsIn(history)].sort(), ['k1', 'k2']);
  assert.deepEqual([...keyIdsIn({ payloads: [defaultPayloadConverter.toPayload('plain')] })], []);
  assert.deepEqual([...keyIdsIn(null)], []);
});

test('a key of the file can be dropped when a complete scan found nothing holding it and it does not encrypt', () => {
  const ring = parseKeyFile(
    ['k3 decrypt-only', 'k2', 'k1'].map((l, i) => l.replace(/^(\S+)/, `$1 ${key(i).toString('base64')}`)).join('\n'),
    'f',
  );
  const report = (...held: string[]): KeyUsageReport => ({
    keys: held.map((keyId) => ({ keyId, workflows: 1, schedules: 0, examples: ['w'] })),
    workflowsScanned: held.length,
    schedulesScanned: 0,
    complete: true,
  });
  assert.deepEqual(unusedKeys(report('k1', 'k2'), ring), ['k3']);
  assert.deepEqual(unusedKeys(report(), ring), ['k3', 'k1'], 'never the encrypting key');
  assert.deepEqual(unusedKeys(report('k1', 'k3', 'gone'), ring), []);
  assert.deepEqual(unusedKeys({ ...report(), complete: false }, ring), [], 'not from a scan stopped at --limit');
});
