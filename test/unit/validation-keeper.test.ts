// test-lane: parallel
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkKeeperInput, keeperInputProblems } from '../../src/policies/validation/keeper';
import type { BundleKeeperInput } from '../../src/shared/bundle-keeper';

const valid: BundleKeeperInput = { domain: 'docs.example.com', sink: 'prod-config' };

describe('keeper input validation (client, CLI and workflow)', () => {
  test('a valid input has no problem and no conflict', () => {
    assert.deepEqual(checkKeeperInput(valid), { problems: [], conflicts: [] });
    assert.deepEqual(keeperInputProblems({ ...valid, kind: 'air-gapped', sink: 'airgap-mirror' }), []);
  });

  test('problems name every field, in order: domain, sink, refresh margin, version, cycles', () => {
    const { problems, conflicts } = checkKeeperInput({
      domain: 'https://docs.example.com',
      sink: 'has spaces',
      version: ' ',
      continueAsNewAfterCycles: 0,
    });
    assert.equal(problems.length, 4, problems.join(' | '));
    assert.match(problems[0]!, /scheme/);
    assert.match(problems[1]!, /sink must be a sink name/);
    assert.match(problems[2]!, /version/);
    assert.match(problems[3]!, /continueAsNewAfterCycles/);
    assert.deepEqual(conflicts, []);
  });

  test('an inline sink object is a problem for a client; the workflow leaves the sink to the worker', () => {
    const inline = { ...valid, sink: { type: 'command', command: 'id' } };
    assert.match(checkKeeperInput(inline).problems[0]!, /name of a sink in the worker's sinks file/);
    assert.deepEqual(checkKeeperInput(inline, { sink: 'worker' }).problems, []);
  });

  test('not an object', () => {
    assert.deepEqual(checkKeeperInput(null).problems, ['input must be an object']);
  });
});
