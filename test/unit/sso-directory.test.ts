// test-lane: parallel
// The sign-on directory (sso-provider/directory.ts): parsing with one-line errors, password hashes, the
// first-run file, and a change picked up on the next read.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { stringify } from 'yaml';
import {
  clientSecret,
  ensureDirectory,
  hashPassword,
  parseDirectory,
  verifyPassword,
  watchDirectory,
} from '../../sso-provider/directory';

const dir = mkdtempSync(path.join(os.tmpdir(), 'sso-directory-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const HASH = hashPassword('correct horse');
const reader = {
  username: 'reader',
  name: 'Reader',
  email: 'reader@x.test',
  password: HASH,
  roles: { default: 'reader' },
};

describe('parseDirectory', () => {
  test('reads users, apps and services; missing sections are empty', () => {
    const directory = parseDirectory(stringify({ users: [reader] }), 'dir.yaml');
    assert.deepEqual(directory.users[0]?.roles, { default: 'reader' });
    assert.deepEqual(directory.apps, []);
    assert.deepEqual(directory.services, []);
  });

  test('names the file, the entry and the field in one line', () => {
    const bad = (data: unknown) => () => parseDirectory(stringify(data), 'dir.yaml');
    assert.throws(bad({ users: [{ ...reader, password: 'hunter2hunter2' }] }), (err: Error) => {
      assert.match(err.message, /^dir\.yaml: users\[0\] \(reader\): password: a scrypt hash/);
      assert.doesNotMatch(err.message, /hunter2/);
      assert.doesNotMatch(err.message, /\n/);
      return true;
    });
    assert.throws(
      bad({ users: [{ ...reader, roles: { default: 'owner' } }] }),
      /users\[0\] \(reader\): roles\.default/,
    );
    assert.throws(bad({ services: [{ clientId: 'w', roles: {} }] }), /services\[0\] \(w\): secretFile/);
    assert.throws(bad({ apps: [{ clientId: 'ui', secretFile: 's', redirectUris: ['ftp://x'] }] }), /apps\[0\] \(ui\)/);
    assert.throws(bad({ users: [reader, reader] }), /users: reader is listed twice/);
    assert.throws(bad({ groups: [] }), /dir\.yaml: Unrecognized key: "groups"/);
    assert.throws(() => parseDirectory('users: [', 'dir.yaml'), /dir\.yaml: not YAML/);
  });
});

describe('passwords', () => {
  test('a hash verifies its password only, and differs each time (salted)', async () => {
    assert.ok(await verifyPassword('correct horse', HASH));
    assert.ok(!(await verifyPassword('correct horsf', HASH)));
    assert.ok(!(await verifyPassword('correct horse', 'plain$text')));
    assert.notEqual(hashPassword('correct horse'), HASH);
  });
});

describe('ensureDirectory', () => {
  const file = path.join(dir, 'first', 'directory.yaml');
  const made = ensureDirectory(file, {
    namespace: 'default',
    uiRedirectUri: 'http://127.0.0.1:8633/auth/sso/callback',
  });

  test('makes three people, the UI app and three services, with private files', async () => {
    assert.equal(made.created, true);
    const directory = parseDirectory(readFileSync(file, 'utf8'), file);
    assert.deepEqual(
      directory.users.map((u) => [u.username, u.roles]),
      [
        ['admin', { default: 'admin', 'temporal-system': 'admin' }],
        ['writer', { default: 'writer', 'temporal-system': 'reader' }],
        ['reader', { default: 'reader', 'temporal-system': 'reader' }],
      ],
    );
    assert.deepEqual(
      directory.services.map((s) => [s.clientId, s.roles]),
      [
        ['docs-admin-worker', { default: 'writer' }],
        ['docs-admin-cli', { default: 'writer' }],
        ['docs-admin-setup', { default: 'admin', 'temporal-system': 'admin' }],
      ],
    );
    assert.deepEqual(directory.apps[0]?.redirectUris, ['http://127.0.0.1:8633/auth/sso/callback']);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    for (const client of [...directory.apps, ...directory.services]) {
      assert.ok(clientSecret(file, client).length >= 40);
      assert.equal(statSync(path.join(path.dirname(file), client.secretFile)).mode & 0o777, 0o600);
    }
    assert.ok(made.created);
    for (const user of directory.users) assert.ok(await verifyPassword(made.passwords[user.username]!, user.password));
    assert.doesNotMatch(readFileSync(file, 'utf8'), new RegExp(made.passwords.reader!));
  });

  test('leaves an existing file alone', () => {
    const before = readFileSync(file, 'utf8');
    assert.deepEqual(ensureDirectory(file, { namespace: 'other', uiRedirectUri: 'http://x.test/cb' }), {
      created: false,
    });
    assert.equal(readFileSync(file, 'utf8'), before);
  });
});

test('watchDirectory picks up a change and keeps the last good directory through a bad one', () => {
  const file = path.join(dir, 'watched.yaml');
  writeFileSync(file, stringify({ users: [reader] }));
  const problems: string[] = [];
  const current = watchDirectory(file, (p) => problems.push(p));
  assert.equal(current().users.length, 1);
  writeFileSync(file, stringify({ users: [reader, { ...reader, username: 'late' }] }));
  assert.deepEqual(
    current().users.map((u) => u.username),
    ['reader', 'late'],
  );
  writeFileSync(file, 'users: [');
  assert.equal(current().users.length, 2);
  assert.equal(problems.length, 1);
  assert.match(problems[0]!, /not YAML.*still using the directory read before/);
});
