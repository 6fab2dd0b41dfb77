// test-lane: parallel
// The client's response schemas (src/api/schemas.ts) read the answers the platform documents (its OpenAPI
// documents, emulator/documented.ts) and earlier shapes; a field the client does not use never fails a call.
// And the documented check itself: it accepts the document's own example and names what the emulator once
// invented.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { agentJobSchema, bundleSchema, deploymentUpdateSchema, staticExportJobSchema } from '../../src/api/schemas';
import { documentedDeploymentUpdate, undocumentedAnswer } from '../../emulator';

/** GET /v1/project/update-status/{statusId} as its documentation shows it (openapi.json), values filled in. */
const documentedUpdate = {
  _id: '67890abcdef1234567890abc',
  projectId: '12345abc',
  createdAt: '2024-01-15T10:30:00.000Z',
  endedAt: '2024-01-15T10:32:45.000Z',
  status: 'success',
  summary: 'Successfully deployed documentation',
  logs: ['Starting build...', 'Building pages...', 'Deployment successful'],
  subdomain: 'example',
  screenshot: 'https://example.com/s.png',
  screenshotLight: 'https://example.com/s-light.png',
  screenshotDark: 'https://example.com/s-dark.png',
  author: { name: 'Jane Doe', avatarUrl: 'https://avatars.example.com/u/1', githubUserId: 12345 },
  commit: {
    sha: 'a1b2c3d4e5f6',
    ref: 'main',
    message: 'Update quickstart guide',
    filesChanged: { added: ['guides/new.mdx'], modified: ['quickstart.mdx', 'docs.json'], removed: [] },
  },
  source: 'github',
};

const parseUpdate = (body: unknown) => deploymentUpdateSchema.parse(body);

describe('deployment update (client)', () => {
  test('the documented answer: filesChanged lists counted, author object and the rest ignored', () => {
    assert.deepEqual(parseUpdate(documentedUpdate), {
      status: 'success',
      commit: { sha: 'a1b2c3d4e5f6', ref: 'main', message: 'Update quickstart guide', filesChanged: 3 },
      source: 'github',
      logs: ['Starting build...', 'Building pages...', 'Deployment successful'],
      createdAt: '2024-01-15T10:30:00.000Z',
      endedAt: '2024-01-15T10:32:45.000Z',
    });
  });

  test('a queued update: no endedAt, lists missing or partial, author null', () => {
    const { endedAt: _ended, ...queued } = documentedUpdate;
    const update = parseUpdate({
      ...queued,
      status: 'queued',
      author: null,
      commit: { ...documentedUpdate.commit, filesChanged: { modified: ['a.mdx'] } },
    });
    assert.equal(update.endedAt, null);
    assert.equal(update.commit?.filesChanged, 1);
    assert.equal(parseUpdate({ status: 'queued' }).commit, null);
  });

  test('earlier shapes still read: a count, a numeric string, one list, an author string', () => {
    const withFiles = (filesChanged: unknown) =>
      parseUpdate({ ...documentedUpdate, author: 'Jane', commit: { ...documentedUpdate.commit, filesChanged } });
    assert.equal(withFiles(2).commit?.filesChanged, 2);
    assert.equal(withFiles('4').commit?.filesChanged, 4);
    assert.equal(withFiles(['a', 'b']).commit?.filesChanged, 2);
    assert.equal(withFiles(null).commit?.filesChanged, null);
  });

  test('fields the client does not use never fail the call, whatever they hold', () => {
    const odd = parseUpdate({
      ...documentedUpdate,
      createdAt: 1705314600000,
      endedAt: { $date: '2024-01-15' },
      logs: 5,
      source: { kind: 'api' },
      author: 7,
      screenshot: null,
      commit: { sha: 'abc1234', ref: 5, message: ['x'], filesChanged: 'many' },
    });
    assert.deepEqual(odd.commit, { sha: 'abc1234', ref: null, message: null, filesChanged: null });
    assert.deepEqual([odd.createdAt, odd.endedAt, odd.logs, odd.source], [null, null, [], null]);
    // A commit without a usable sha names no commit: the keeper says so (it does not retry a parse error).
    assert.equal(parseUpdate({ status: 'success', commit: { sha: 42 } }).commit, null);
    assert.equal(parseUpdate({ status: 'success', commit: 'abc' }).commit, null);
  });

  test('what the client uses is still checked: status', () => {
    assert.throws(() => parseUpdate({ ...documentedUpdate, status: undefined }));
    assert.throws(() => parseUpdate({ ...documentedUpdate, status: 3 }));
    assert.throws(() => parseUpdate({ ...documentedUpdate, status: '  ' }));
  });

  test('every status is compared as documented: trimmed and lower case, in one place', () => {
    assert.equal(parseUpdate({ ...documentedUpdate, status: ' Success ' }).status, 'success');
    const job = { id: 'aj_1', status: 'COMPLETED', prLink: null, createdAt: '2026-01-01T00:00:00Z' };
    assert.equal(agentJobSchema.parse(job).status, 'completed');
    const exportJob = { jobId: 'ex_1', status: 'Failed ', createdAt: '2026-01-01T00:00:00Z' };
    assert.equal(staticExportJobSchema.parse(exportJob).status, 'failed');
  });
});

describe('agent job, static export, bundle (client)', () => {
  const job = {
    id: 'aj_1',
    status: 'completed',
    source: { repository: 'https://github.com/acme/docs', ref: null },
    model: 'claude',
    prLink: 'https://github.com/acme/docs/pull/1',
    createdAt: '2025-01-01T00:00:00Z',
    archivedAt: null,
  };

  test('unused agent job fields of any type are dropped to null; prLink is still checked', () => {
    const parsed = agentJobSchema.parse({ ...job, source: 'acme/docs', model: 5, archivedAt: 3 });
    assert.deepEqual(parsed.source, { repository: null, ref: null });
    assert.deepEqual([parsed.model, parsed.archivedAt], [null, null]);
    assert.equal(agentJobSchema.parse({ ...job, source: { repository: 1, ref: 'main' } }).source.ref, 'main');
    assert.throws(() => agentJobSchema.parse({ ...job, prLink: 5 }));
  });

  test('export: numbers as strings; an odd updatedAt or error does not fail the call', () => {
    const base = {
      jobId: 'se_1',
      status: 'failed',
      progress: '42.5',
      pageCount: '3',
      createdAt: '2025-01-01T00:00:00Z',
    };
    const parsed = staticExportJobSchema.parse({ ...base, updatedAt: 5, error: { code: 1 } });
    assert.deepEqual(parsed, { ...base, progress: 42.5, pageCount: 3, updatedAt: base.createdAt });
    assert.equal(staticExportJobSchema.parse({ ...base, error: 'boom' }).error, 'boom');
  });

  test('bundle: sizeBytes as a string; the link and its expiry are required', () => {
    const bundle = {
      jobId: 'se_1',
      bundleUrl: 'https://s3.example.com/b.tar.gz?X-Amz-Signature=x',
      sizeBytes: '10',
      expiresAt: '2025-01-01T01:00:00Z',
    };
    assert.equal(bundleSchema.parse(bundle).sizeBytes, 10);
    assert.throws(() => bundleSchema.parse({ ...bundle, bundleUrl: undefined }));
    assert.throws(() => bundleSchema.parse({ ...bundle, expiresAt: 'soon' }));
  });
});

describe('the documented check (emulator/documented.ts)', () => {
  test("the document's own example is as documented", () => {
    assert.equal(undocumentedAnswer('getUpdateStatus', 200, documentedUpdate), null);
    assert.equal(undocumentedAnswer('triggerUpdate', 202, { statusId: 'x' }), null);
    assert.equal(undocumentedAnswer('getExport', 404, { error: 'export job x not found' }), null);
  });

  test('what the emulator once answered is named: a number of files, a null endedAt, an undocumented field', () => {
    const earlier = {
      status: 'in_progress',
      commit: { sha: 'abc', ref: 'main', message: 'm', filesChanged: 2 },
      source: 'api',
      logs: [],
      createdAt: '2025-01-01T00:00:00.000Z',
      endedAt: null,
    };
    const found = undocumentedAnswer('getUpdateStatus', 200, earlier) ?? '';
    assert.match(found, /commit\.filesChanged/);
    assert.match(found, /endedAt/);
    assert.match(undocumentedAnswer('getUpdateStatus', 200, { ...documentedUpdate, buildId: 1 }) ?? '', /buildId/);
  });

  test('a success must have its documented status; an error its Error body', () => {
    assert.match(undocumentedAnswer('createAgentJob', 200, {}) ?? '', /answered 200, documented 201/);
    assert.match(undocumentedAnswer('getAgentJob', 404, { message: 'gone' }) ?? '', /message/);
    assert.ok(documentedDeploymentUpdate.safeParse({ ...documentedUpdate, source: 'carrier-pigeon' }).error);
  });
});
