// test-lane: parallel
// The admin API client reads an error answer only as far as its `{"error": ...}` needs (ERROR_BODY_BYTES,
// the one capped reader of src/api/capped-body.ts) and quotes it only redacted and short. The server here
// plays an impersonated or broken API: a real HTTP server on loopback, answering what the emulator never would.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { AdminApiClient } from '../../src/api/client';
import { type AdminApiError, ServerError, UnauthorizedError } from '../../src/api/errors';
import { waitFor } from '../../scripts/wait';
import { type HostileServer, startHostileServer } from '../helpers/hostile-server';

describe('error answers of the admin API', () => {
  let api: HostileServer;
  let client: AdminApiClient;
  const JOBS = '/v1/static-export/jobs';

  before(async () => {
    api = await startHostileServer({
      [`${JOBS}/leaky`]: { status: 401, body: '{"error":"no session: postgres://app:hunter2@db/x refused"}' },
      // 64 KB of an error, announced as 128 KB and never finished: only a reader that stops early is done.
      [`${JOBS}/held`]: {
        status: 500,
        streamBytes: 64 * 1024,
        prefix: '{"error":"postgres://app:hunter2@db/x',
        hold: true,
      },
    });
    client = new AdminApiClient({
      baseUrl: api.url,
      apiKey: 'mint_error_bodies_test_key_0123456789',
      timeouts: { bodyMs: 10_000, totalMs: 15_000 },
      logger: { warn: () => undefined },
    });
  });
  after(async () => {
    await client?.close();
    await api?.close();
  });

  const failure = async (jobId: string): Promise<AdminApiError> => {
    try {
      await client.getExport(jobId);
    } catch (err) {
      return err as AdminApiError;
    }
    assert.fail('expected a failure');
  };

  test('a credential in the error text is redacted', async () => {
    const err = await failure('leaky');
    assert.ok(err instanceof UnauthorizedError, String(err));
    assert.equal(err.message, 'getExport: HTTP 401: no session: postgres://[redacted]@db/x refused');
  });

  test('an error body is read to a few KB, not to its end: the call fails at once as a server error', async () => {
    const before = api.written.length;
    const err = await failure('held');
    assert.ok(err instanceof ServerError, `${err.name}: ${err.message}`);
    assert.match(err.message, /^getExport: HTTP 500: \{"error":"postgres:\/\/\[redacted\]@db\/x+\.\.\.$/);
    assert.ok(err.message.length < 300, 'the snippet is short');
    await waitFor(() => api.written.length > before, { what: 'the client to close the held answer' });
  });
});
