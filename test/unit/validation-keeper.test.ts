import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkKeeperInput, keeperInputProblems } from '../../src/policies/validation/keeper';
import type { BundleKeeperInput } from '../../src/shared/bundle-keeper';

const valid: BundleKeeperInput = {
  domain: 'docs.example.com',
  sink: { type: 'file', path: '/etc/docs/static-export.json' },
};

describe('keeper input validation (client, CLI and workflow)', () => {
  test('a valid input has no problem and no conflict', () => {
    assert.deepEqual(checkKeeperInput(valid), { problems: [], conflicts: [] });
    assert.deepEqual(
      keeperInputProblems({
        ...valid,
        kind: 'air-gapped',
        sink: { type: 'mirror', dir: '/srv', urlPrefix: 'http://b.internal' },
      }),
      [],
    );
  });

  test('problems name every field, in order: domain, sink, refresh margin, version, cycles', () => {
    const { problems, conflicts } = checkKeeperInput({
      domain: 'https://docs.example.com',
      sink: { type: 'webhook', url: 'ftp://x' },
      version: ' ',
      continueAsNewAfterCycles: 0,
    });
    assert.equal(problems.length, 4, problems.join(' | '));
    assert.match(problems[0]!, /scheme/);
    assert.match(problems[1]!, /webhook/);
    assert.match(problems[2]!, /version/);
    assert.match(problems[3]!, /continueAsNewAfterCycles/);
    assert.deepEqual(conflicts, []);
  });

  test('a deployment kind that forbids the sink is a conflict, not a problem; checked only with a valid sink', () => {
    const airGappedWebhook = {
      ...valid,
      kind: 'air-gapped' as const,
      sink: { type: 'webhook' as const, url: 'https://hooks.example.com/x' },
    };
    const checked = checkKeeperInput(airGappedWebhook);
    assert.deepEqual(checked.problems, []);
    assert.equal(checked.conflicts.length, 1);
    assert.deepEqual(keeperInputProblems(airGappedWebhook), checked.conflicts);
    const badSink = checkKeeperInput({ ...airGappedWebhook, sink: { type: 'webhook', url: 'nope' } });
    assert.equal(badSink.problems.length, 1);
  });

  test('not an object', () => {
    assert.deepEqual(checkKeeperInput(null).problems, ['input must be an object']);
  });
});
