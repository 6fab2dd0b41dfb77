// test-lane: parallel
// `docs-admin keygen`: the staged rotation of the payload key file as an operator runs it (add, promote,
// drop), and codec server tokens; in process, nothing connects to Temporal. And the usage of the rotation's
// other commands (`keys in-use`, `schedule rekey`: test/integration/schedule-rekey.test.ts runs them).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { parseKeyFile, parseTokenFile } from '../../src/codec';
import { runCli } from '../../src/starter';

const dir = mkdtempSync(path.join(os.tmpdir(), 'cli-keygen-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(
    args,
    {
      stdout: { write: (s: string) => ((stdout += s), true) },
      stderr: { write: (s: string) => ((stderr += s), true) },
      env,
    },
    () => Promise.reject(new Error('must not connect')),
  );
  return { code, stdout, stderr };
}
const keygen = (args: string[], env: NodeJS.ProcessEnv = {}) => cli(['keygen', ...args], env);

describe('docs-admin keygen', () => {
  test('--add, --promote, --drop: a staged rotation of PAYLOAD_ENCRYPTION_KEYS_FILE', async () => {
    const file = path.join(dir, 'keys');
    const first = await keygen(['--add'], { PAYLOAD_ENCRYPTION_KEYS_FILE: file });
    assert.equal(first.code, 0, first.stderr);
    const k1 = /^(\S+): created .*; it encrypts\n$/.exec(first.stdout)?.[1] as string;
    assert.ok(k1, first.stdout);
    assert.equal(statSync(file).mode & 0o777, 0o600, 'a new key file is 0600');
    const second = await keygen(['--add', '--file', file]);
    const k2 = /^(\S+): added to .* as decrypt-only; promote it once every host has it: keygen --promote \1\n$/.exec(
      second.stdout,
    )?.[1] as string;
    assert.ok(k2, second.stdout);
    let ring = parseKeyFile(readFileSync(file, 'utf8'), file);
    assert.equal(ring.current.id, k1, 'the added key does not encrypt yet');
    assert.deepEqual([...ring.decryptOnly], [k2]);

    assert.equal((await keygen(['--drop', k1, '--file', file])).code, 1, 'the encrypting key is not dropped');
    const promoted = await keygen(['--promote', k2, '--file', file]);
    assert.equal(promoted.code, 0, promoted.stderr);
    ring = parseKeyFile(readFileSync(file, 'utf8'), file);
    assert.equal(ring.current.id, k2);
    assert.ok(ring.byId.has(k1), 'the old key still decrypts');
    const dropped = await keygen(['--drop', k1, '--file', file]);
    assert.equal(dropped.code, 0, dropped.stderr);
    assert.deepEqual([...parseKeyFile(readFileSync(file, 'utf8'), file).byId.keys()], [k2]);
    assert.equal(statSync(file).mode & 0o777, 0o600, 'the mode is kept');
  });

  test('bad requests are one line, and the file is left as it was', async () => {
    const file = path.join(dir, 'kept');
    writeFileSync(file, 'k1 ' + Buffer.alloc(32, 1).toString('base64') + '\n');
    const before = readFileSync(file, 'utf8');
    const cases: [string[], RegExp][] = [
      [['--promote', 'k9', '--file', file], /^error: .*kept: no key "k9" in the file\n$/],
      [['--add', '--promote', 'k1', '--file', file], /^error: invalid input: give one of --add, --promote/],
      [['--add'], /^error: invalid input: give --file or set PAYLOAD_ENCRYPTION_KEYS_FILE\n$/],
      [['--file', file], /^error: invalid input: --file goes with --add/],
    ];
    for (const [args, expected] of cases) {
      const result = await keygen(args);
      assert.notEqual(result.code, 0, args.join(' '));
      assert.match(result.stderr, expected);
    }
    assert.equal(readFileSync(file, 'utf8'), before);
  });

  test('--token prints a token, or adds one to a token file (0600) beside those there', async () => {
    const printed = await keygen(['--token']);
    assert.match(printed.stdout, /^[A-Za-z0-9_-]{43}\n$/);
    const file = path.join(dir, 'codec-token');
    assert.match(
      (await keygen(['--token', '--file', file])).stdout,
      /^added a token to .*codec-token \(1 accepted\)\n$/,
    );
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const [first] = parseTokenFile(readFileSync(file, 'utf8'), file);
    const again = await keygen(['--token', '--file', file]);
    assert.match(again.stdout, /\(2 accepted\)/);
    assert.ok(!again.stdout.includes(first as string), 'a token added to a file is not printed');
    assert.equal(parseTokenFile(readFileSync(file, 'utf8'), file)[0], first);
  });

  test('--help of keygen, keys in-use and schedule rekey; rekey without a key file is refused before connecting', async () => {
    const help = async (args: string[]) => {
      const result = await cli([...args, '--help']);
      assert.equal(result.code, 0, result.stderr);
      return result.stdout;
    };
    assert.match(
      await help(['keygen']),
      /--file <path>[\s\S]*--add[\s\S]*--promote <keyId>[\s\S]*--drop <keyId>[\s\S]*--token/,
    );
    assert.match(await help(['keys', 'in-use']), /^Usage: docs-admin keys in-use[\s\S]*--limit <n>[\s\S]*--json/);
    assert.match(await help(['schedule', 'rekey']), /^Usage: docs-admin schedule rekey[\s\S]*--json/);
    const rekey = await cli(['schedule', 'rekey']);
    assert.equal(rekey.code, 2);
    assert.equal(
      rekey.stderr,
      "error: invalid input: PAYLOAD_ENCRYPTION_KEYS_FILE is not set: rekey encrypts with the key file's encrypting key\n",
    );
  });
});
