// test-lane: parallel
// Publishing's pure parts: repository and branch keys, keeper source checks, the publish signal's
// argument read as untrusted input, and the update polling delay.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  branchOf,
  keeperSourceProblems,
  readPublishRequest,
  repositoryKey,
} from '../../src/policies/validation/publish';
import { updatePollDelay } from '../../src/workflows/polling';
import { sourceFrom } from '../../src/cli/commands/source-options';

const source = { projectId: 'acme', repository: 'https://github.com/Acme/docs', ref: 'main' };

describe('repositoryKey and branchOf', () => {
  test('web URL, clone URL and owner/name are one repository; other things are none', () => {
    const key = 'github.com/acme/docs';
    for (const v of [
      'https://github.com/Acme/docs',
      'https://github.com/acme/docs.git',
      'acme/docs',
      'https://github.com/acme/docs/',
    ])
      assert.equal(repositoryKey(v), key, v);
    for (const v of [
      'file:///etc/passwd',
      'https://github.com/acme',
      'https://u:p@github.com/a/b',
      'a b',
      42,
      undefined,
    ])
      assert.equal(repositoryKey(v), null, String(v));
  });

  test('branches from refs/heads and bare names; tags and traversal refused', () => {
    assert.equal(branchOf('refs/heads/main'), 'main');
    assert.equal(branchOf('release/v2'), 'release/v2');
    assert.equal(branchOf('refs/tags/v1'), null);
    assert.equal(branchOf('a..b'), null);
    assert.equal(branchOf(''), null);
  });
});

describe('keeperSourceProblems', () => {
  test('absent or valid: none; each bad field named', () => {
    assert.deepEqual(keeperSourceProblems(undefined), []);
    assert.deepEqual(keeperSourceProblems(source), []);
    const problems = keeperSourceProblems({ projectId: 'a b', repository: 'ftp://x/y/z', ref: 'refs/tags/v1' });
    assert.equal(problems.length, 3);
    assert.match(problems.join('\n'), /projectId[\s\S]*repository[\s\S]*ref/);
    assert.deepEqual(keeperSourceProblems('x'), ['source must be an object {projectId, repository, ref}']);
  });
});

describe('keep --project --repository --ref', () => {
  test('all three or none', () => {
    assert.equal(sourceFrom({}), undefined);
    assert.deepEqual(sourceFrom({ project: 'acme', repository: source.repository, ref: 'main' }), source);
    assert.throws(() => sourceFrom({ project: 'acme' }), /needs all of --project, --repository and --ref/);
  });
});

describe('readPublishRequest', () => {
  test('no argument is a plain publish', () => {
    assert.deepEqual(readPublishRequest(undefined, source), { request: {} });
    assert.deepEqual(readPublishRequest(null, undefined), { request: {} });
  });

  test("a push to the keeper's branch, fields checked one by one", () => {
    const read = readPublishRequest(
      {
        repository: 'https://github.com/acme/docs.git',
        ref: 'refs/heads/main',
        sha: 'a'.repeat(40),
        deliveryId: '72d3162e-cc78-11e3-81ab-4c9367dc0958',
        pullRequest: { number: 7, url: 'https://github.com/Acme/docs/pull/7' },
        agentWorkflowId: 'agent-job:acme:r1',
        extra: 'ignored',
      },
      source,
    );
    assert.ok('request' in read);
    assert.deepEqual(Object.keys(read.request).sort(), [
      'agentWorkflowId',
      'deliveryId',
      'pullRequest',
      'ref',
      'repository',
      'sha',
    ]);
  });

  test('another repository or branch is ignored whole; bad display fields are dropped', () => {
    assert.ok('ignored' in readPublishRequest({ repository: 'https://github.com/evil/docs' }, source));
    assert.ok('ignored' in readPublishRequest({ ref: 'refs/heads/dev' }, source));
    assert.ok('ignored' in readPublishRequest({ ref: 'refs/tags/v1' }, source));
    assert.ok('ignored' in readPublishRequest('publish', source));
    const read = readPublishRequest(
      {
        sha: 'not-a-sha',
        deliveryId: 'x'.repeat(101),
        pullRequest: { number: 7, url: 'https://evil.example/pull/7' },
        agentWorkflowId: 'has space',
      },
      source,
    );
    assert.deepEqual(read, { request: {} });
  });
});

describe('updatePollDelay', () => {
  test('a tenth of the elapsed time between 1 s and 5 s', () => {
    const first = { atMs: 0, status: 'queued' };
    assert.ok(updatePollDelay([first], 0) >= 900 && updatePollDelay([first], 0) <= 1_100);
    const mid = updatePollDelay([first], 20_000);
    assert.ok(mid >= 1_800 && mid <= 2_200, String(mid));
    assert.ok(updatePollDelay([first], 600_000) <= 5_000);
    assert.equal(updatePollDelay([first], 20_000), updatePollDelay([first], 20_000), 'deterministic');
  });
});
