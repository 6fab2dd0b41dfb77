// test-lane: parallel
// ADMIN_API_KEY_FILE: the worker's config (exactly one of the two variables, a clear error for a
// missing file, the content trimmed), the key source (re-read on change, through a Kubernetes-style
// symlink swap, the last good key kept while the file is rewritten), and the client against the
// emulator: a 401 re-reads the file once and retries with a new key; a key that still fails is
// Unauthorized. And the 403s: each cause the emulator can answer becomes a non-retryable failure
// whose message names the operation and the causes in order.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { AdminApiClient } from '../../src/api/client';
import { UnauthorizedError } from '../../src/api/errors';
import { fileKey, readKeyFile } from '../../src/api/key-source';
import { callAdminApi } from '../../src/activities/api-call';
import { ConfigError, loadWorkerConfig } from '../../src/config';
import { type EmulatorHandle, startEmulator } from '../../emulator';

const OLD = 'mint_key_file_unit_old_0001';
const NEW = 'mint_key_file_unit_new_0002';
const URL_ = 'http://127.0.0.1:4010';
const dir = mkdtempSync(path.join(tmpdir(), 'admin-key-file-'));
let n = 0;
const keyFile = (content: string): string => {
  const file = path.join(dir, `key-${++n}`);
  writeFileSync(file, content);
  return file;
};
after(() => rmSync(dir, { recursive: true, force: true }));

function configProblems(env: NodeJS.ProcessEnv): string[] {
  try {
    loadWorkerConfig({ ADMIN_API_URL: URL_, ...env });
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.problems;
  }
  return assert.fail('expected a ConfigError');
}

describe('ADMIN_API_KEY_FILE in the worker config', () => {
  test('both variables set: an error naming both, and neither value', () => {
    const problems = configProblems({ ADMIN_API_KEY: OLD, ADMIN_API_KEY_FILE: keyFile(`${NEW}\n`) });
    assert.deepEqual(problems, ['ADMIN_API_KEY and ADMIN_API_KEY_FILE are both set: set only one of them']);
  });

  test('a missing file: a clear error with the path', () => {
    const missing = path.join(dir, 'nope');
    assert.deepEqual(configProblems({ ADMIN_API_KEY_FILE: missing }), [
      `ADMIN_API_KEY_FILE: cannot read ${missing} (ENOENT)`,
    ]);
  });

  test('a file that does not hold an admin key: an error that does not echo it', () => {
    const [problem] = configProblems({ ADMIN_API_KEY_FILE: keyFile('sk_live_not_an_admin_key\n') });
    assert.match(problem!, /ADMIN_API_KEY_FILE: .*must begin with "mint_"/);
    assert.ok(!problem!.includes('sk_live_not_an_admin_key'));
  });

  test('the trailing newline (and surrounding whitespace) is trimmed', () => {
    const file = keyFile(`  ${OLD}\r\n`);
    const config = loadWorkerConfig({ ADMIN_API_URL: URL_, ADMIN_API_KEY_FILE: file });
    assert.equal(config.adminApiKey, OLD);
    assert.equal(config.adminApiKeyFile, file);
    assert.equal(readKeyFile(file), OLD);
  });
});

test('the worker process with both set: exit non-zero with one line naming both, and no key', () => {
  const result = spawnSync(process.execPath, ['--import', 'tsx', 'src/worker.ts'], {
    cwd: path.resolve(__dirname, '../..'),
    env: { PATH: process.env.PATH, ADMIN_API_URL: URL_, ADMIN_API_KEY: OLD, ADMIN_API_KEY_FILE: keyFile(NEW) },
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.notEqual(result.status, 0);
  assert.equal(
    result.stderr,
    'docs-admin worker: cannot start, fix the environment: ADMIN_API_KEY and ADMIN_API_KEY_FILE are both set: set only one of them\n',
  );
  assert.ok(!`${result.stdout}${result.stderr}`.includes(OLD));
});

describe('the key file source', () => {
  test('re-reads the file when it changes, and only then', () => {
    const file = keyFile(`${OLD}\n`);
    const changes: boolean[] = [];
    const source = fileKey(file, { onChange: (e) => changes.push(e.rotated) });
    assert.equal(source.current(), OLD);
    assert.equal(source.current(), OLD);
    writeFileSync(file, `${NEW}\n`);
    assert.equal(source.current(), NEW);
    assert.deepEqual(changes, [true]);
    assert.deepEqual(source.seen, [OLD, NEW]);
  });

  test('follows a Kubernetes secret volume: the key is a symlink into a directory that is swapped', () => {
    // <mount>/admin_api_key -> ..data/admin_api_key, ..data -> ..<timestamp>; an update renames a new ..data.
    const mount = path.join(dir, `k8s-${++n}`);
    mkdirSync(path.join(mount, '..v1'), { recursive: true });
    writeFileSync(path.join(mount, '..v1', 'admin_api_key'), OLD);
    symlinkSync('..v1', path.join(mount, '..data'));
    symlinkSync('..data/admin_api_key', path.join(mount, 'admin_api_key'));
    const source = fileKey(path.join(mount, 'admin_api_key'));
    assert.equal(source.current(), OLD);

    mkdirSync(path.join(mount, '..v2'));
    writeFileSync(path.join(mount, '..v2', 'admin_api_key'), NEW);
    symlinkSync('..v2', path.join(mount, '..data_tmp'));
    renameSync(path.join(mount, '..data_tmp'), path.join(mount, '..data'));
    rmSync(path.join(mount, '..v1'), { recursive: true });
    assert.equal(source.current(), NEW);
  });

  test('a file caught empty mid-rewrite keeps the last good key, and the next call reads it again', () => {
    const file = keyFile(OLD);
    const problems: string[] = [];
    const source = fileKey(file, { onChange: (e) => e.problem && problems.push(e.problem) });
    writeFileSync(file, '');
    assert.equal(source.current(), OLD);
    assert.equal(problems.length, 1);
    assert.ok(!problems[0]!.includes(OLD));
    writeFileSync(file, NEW);
    assert.equal(source.current(), NEW);
  });
});

describe('the client with a key file, against the emulator', () => {
  let emu: EmulatorHandle;
  before(async () => {
    emu = await startEmulator({ validKeys: [OLD, NEW] });
  });
  after(() => emu.close());

  /** A key file whose stat does not change when its content does: only a 401 can reveal the new key. */
  function quietKeyFile(content: string): { file: string; rewrite(next: string): void } {
    const file = keyFile(content);
    const pin = () => utimesSync(file, 1_700_000_000, 1_700_000_000);
    pin();
    return {
      file,
      rewrite(next) {
        assert.equal(next.length, content.length, 'same size, so only the 401 path can see it');
        writeFileSync(file, next);
        pin();
      },
    };
  }

  const calls = (status: string): number => emu.counters().calls.getAgentJob?.[status] ?? 0;

  test('401 -> the file is read again -> one retry with the new key succeeds', async () => {
    emu.reset();
    emu.configure({ validKeys: [OLD, NEW], revokedKeys: [] });
    const first = new AdminApiClient({ baseUrl: emu.url, apiKey: OLD });
    const job = (await first.createAgentJob('rot', 'hi')).id;
    await first.close();
    const quiet = quietKeyFile(OLD);
    const client = new AdminApiClient({ baseUrl: emu.url, apiKeyFile: quiet.file });
    try {
      assert.equal((await client.getAgentJob('rot', job)).id, job);
      quiet.rewrite(NEW);
      emu.revokeKey(OLD);
      assert.equal((await client.getAgentJob('rot', job)).id, job);
      assert.equal(calls('401'), 1, 'one 401 with the old key');
      assert.equal(calls('200'), 2);
    } finally {
      await client.close();
    }
  });

  test('a key that still fails after the re-read is Unauthorized, non-retryable, after one call', async () => {
    emu.reset();
    emu.configure({ validKeys: [NEW], revokedKeys: [OLD] });
    const quiet = quietKeyFile(OLD);
    const client = new AdminApiClient({ baseUrl: emu.url, apiKeyFile: quiet.file });
    try {
      const failure = await callAdminApi('getAgentJob', (signal) => client.getAgentJob('rot', 'aj_x', { signal })).then(
        () => assert.fail('expected Unauthorized'),
        (err: unknown) => err,
      );
      assert.ok(failure instanceof ApplicationFailure);
      assert.equal(failure.type, 'Unauthorized');
      assert.equal(failure.nonRetryable, true);
      assert.ok(!failure.message.includes(OLD), 'the key is redacted from the message');
      assert.equal(calls('401'), 1, 'the file held the same key: no retry');
    } finally {
      await client.close();
    }
  });

  test('a new key that fails too: one retry, then Unauthorized', async () => {
    emu.reset();
    emu.configure({ validKeys: ['mint_some_other_key_9'], revokedKeys: [] });
    const quiet = quietKeyFile(OLD);
    const client = new AdminApiClient({ baseUrl: emu.url, apiKeyFile: quiet.file });
    try {
      quiet.rewrite(NEW);
      await assert.rejects(client.getAgentJob('rot', 'aj_x'), UnauthorizedError);
      assert.equal(calls('401'), 2);
    } finally {
      await client.close();
    }
  });
});

test("the emulator's key rotation over HTTP: POST /_emulator/keys adds and revokes", async () => {
  const emu = await startEmulator({ validKeys: [OLD] });
  const client = new AdminApiClient({ baseUrl: emu.url, apiKey: NEW });
  try {
    await assert.rejects(client.getAgentJob('p', 'aj_x'), UnauthorizedError, 'not valid yet');
    const rotate = (body: object) =>
      fetch(`${emu.url}/_emulator/keys`, { method: 'POST', body: JSON.stringify(body) }).then((r) => r.status);
    assert.equal(await rotate({ add: [NEW], revoke: [OLD] }), 200);
    await assert.rejects(client.getAgentJob('p', 'aj_x'), /HTTP 404/, 'the new key is accepted');
    assert.deepEqual(emu.emulator.options.validKeys, [NEW]);
    assert.deepEqual(emu.emulator.options.revokedKeys, [OLD]);
  } finally {
    await client.close();
    await emu.close();
  }
});

describe('403s that say what to fix (the emulator answers each cause)', () => {
  let emu: EmulatorHandle;
  let client: AdminApiClient;
  before(async () => {
    emu = await startEmulator();
    client = new AdminApiClient({ baseUrl: emu.url, apiKey: OLD });
  });
  after(async () => {
    await client.close();
    await emu.close();
  });

  async function failureOf(operation: string, call: (signal: AbortSignal) => Promise<unknown>) {
    const err = await callAdminApi(operation, call).then(
      () => assert.fail(`expected ${operation} to fail`),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ApplicationFailure, String(err));
    assert.equal(err.nonRetryable, true);
    return err;
  }
  const causesIn = (message: string, words: string[]) => {
    const at = words.map((w) => message.indexOf(w));
    assert.ok(
      at.every((i, k) => i > 0 && (k === 0 || i > at[k - 1]!)),
      `expected ${words.join(' < ')} in: ${message}`,
    );
  };

  test('a read-only key: a write is Forbidden, the write scope named first; reads still work', async () => {
    emu.reset();
    emu.configure({ readOnlyKeys: [OLD], ipAllowlist: [], nonEnterpriseKeys: [] });
    const create = await failureOf('createAgentJob', (signal) => client.createAgentJob('p', 'hi', { signal }));
    assert.equal(create.type, 'Forbidden');
    assert.match(create.message, /^createAgentJob: HTTP 403 Forbidden \(this API key is read-only/);
    causesIn(create.message, ['write scope', 'IP allowlist']);
    assert.doesNotMatch(create.message, /plan/);
    const start = await failureOf('startExport', (signal) =>
      client.startExport({ domain: 'd.example.com' }, { signal }),
    );
    assert.equal(start.type, 'Forbidden');
    causesIn(start.message, ['write scope', 'IP allowlist', 'plan']);
    await assert.rejects(client.getAgentJob('p', 'aj_missing'), /HTTP 404/);
  });

  test('an IP allowlist without 127.0.0.1: a read is Forbidden, the allowlist (then the plan) named', async () => {
    emu.reset();
    emu.configure({ readOnlyKeys: [], ipAllowlist: ['203.0.113.7'], nonEnterpriseKeys: [] });
    const get = await failureOf('getExport', (signal) => client.getExport('se_x', { signal }));
    assert.equal(get.type, 'Forbidden');
    assert.match(get.message, /^getExport: HTTP 403 Forbidden \(requests from 127\.0\.0\.1 are not allowed/);
    causesIn(get.message, ['IP allowlist', 'plan']);
    assert.doesNotMatch(get.message, /write scope/);
    const agent = await failureOf('getAgentJob', (signal) => client.getAgentJob('p', 'aj_x', { signal }));
    assert.equal(agent.type, 'Forbidden');
    assert.doesNotMatch(agent.message, /write scope|plan/);
  });

  test('static export not enabled: PlanRequired, as the API says so', async () => {
    emu.reset();
    emu.configure({ readOnlyKeys: [], ipAllowlist: [], nonEnterpriseKeys: [OLD] });
    const start = await failureOf('startExport', (signal) =>
      client.startExport({ domain: 'd.example.com' }, { signal }),
    );
    assert.equal(start.type, 'PlanRequired');
    assert.match(
      start.message,
      /^startExport: static export needs an Enterprise plan \(HTTP 403: static export is not enabled/,
    );
  });
});
