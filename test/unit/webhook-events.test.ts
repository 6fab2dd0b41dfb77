// test-lane: parallel
// The webhook receiver's pure parts: what a delivery asks for (real payload examples from
// @octokit/webhooks-examples), and the secret file read again when it changes (a rotation).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { webhookAction } from '../../src/webhooks/events';
import { WebhookSecrets } from '../../src/webhooks/secrets';
import { mergedPayload, pushPayload } from '../helpers/github';

const REPO = 'https://github.com/Acme/docs';
const SHA = 'c4295bd74fb0f4fda03689c3df3f2803b658fd85';

describe('webhookAction', () => {
  test('a push to a branch publishes it; tags, deletions and other events are ignored', () => {
    assert.deepEqual(webhookAction('push', pushPayload(REPO, 'main', SHA)), {
      kind: 'publish',
      repository: 'github.com/acme/docs',
      repositoryUrl: REPO,
      branch: 'main',
      sha: SHA,
      pullRequest: null,
    });
    const tag = { ...pushPayload(REPO, 'main', SHA), ref: 'refs/tags/v1' };
    assert.equal(webhookAction('push', tag).kind, 'ignore');
    const deleted = { ...pushPayload(REPO, 'main', SHA), deleted: true };
    assert.equal(webhookAction('push', deleted).kind, 'ignore');
    assert.deepEqual(webhookAction('ping', {}), { kind: 'ping' });
    assert.equal(webhookAction('issues', {}).kind, 'ignore');
  });

  test('a merged pull request publishes its base branch with the PR; an unmerged close is ignored', () => {
    const merged = webhookAction('pull_request', mergedPayload(`${REPO}/pull/7`, 'main', SHA));
    assert.deepEqual(merged, {
      kind: 'publish',
      repository: 'github.com/acme/docs',
      repositoryUrl: REPO,
      branch: 'main',
      sha: SHA,
      pullRequest: { number: 7, url: `${REPO}/pull/7` },
    });
    const closed = mergedPayload(`${REPO}/pull/7`, 'main', SHA);
    (closed.pull_request as { merged: boolean }).merged = false;
    assert.equal(webhookAction('pull_request', closed).kind, 'ignore');
  });

  test('a body without what the event promises is a one-line error', () => {
    assert.throws(() => webhookAction('push', { ref: 'refs/heads/main' }), /^Error: push without repository/);
    assert.throws(() => webhookAction('push', { repository: { html_url: REPO } }), /push without ref/);
  });
});

describe('WebhookSecrets', () => {
  test('several secrets; a changed file is read again; an emptied one keeps the last secrets', async () => {
    const dir = await fsp.mkdtemp(path.join(tmpdir(), 'secrets-'));
    try {
      const file = path.join(dir, 's');
      await fsp.writeFile(file, '# rotation\nold\nnew\n');
      const secrets = new WebhookSecrets(file);
      assert.deepEqual(secrets.current(), ['old', 'new']);
      await fsp.writeFile(file, 'newer\n');
      assert.deepEqual(secrets.current(), ['newer']);
      await fsp.writeFile(file, '');
      assert.deepEqual(secrets.current(), ['newer']);
      await fsp.writeFile(path.join(dir, 'empty'), '\n');
      assert.throws(() => new WebhookSecrets(path.join(dir, 'empty')), /no webhook secret/);
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});
