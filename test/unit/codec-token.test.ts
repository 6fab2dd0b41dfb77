// test-lane: parallel
// The codec server's token file (CODEC_SERVER_TOKEN_FILE) and its bearer check.
import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { bearerToken, generateToken, parseTokenFile, tokenFile, tokenMatches } from '../../src/codec';

/** Whether `Authorization: Bearer <token>` names one of `tokens`. */
function bearerMatches(header: string | undefined, tokens: readonly string[]): boolean {
  const given = bearerToken(header);
  return given !== undefined && tokenMatches(given, tokens);
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'codec-token-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const A = 'token-a-0123456789abcdef';
const B = 'token-b-0123456789abcdef';

describe('codec server tokens', () => {
  test('one token a line; blank lines and comments ignored; bad lines named without the token', () => {
    assert.deepEqual(parseTokenFile(`# rotation\n${A}\n\n  ${B}  \n`, 'f'), [A, B]);
    const cases: [string, RegExp][] = [
      ['', /t: no token in the file/],
      ['# only a comment\n', /t: no token in the file/],
      [`${A}\nshort`, /t line 2: the token is shorter than 16 characters$/],
      [`${A} ${B}`, /t line 1: a token is printable ASCII without spaces$/],
    ];
    for (const [text, expected] of cases) assert.throws(() => parseTokenFile(text, 't'), expected);
  });

  test('the bearer header must name one of the tokens exactly', () => {
    const tokens = [A, B];
    assert.ok(bearerMatches(`Bearer ${A}`, tokens));
    assert.ok(bearerMatches(`bearer ${B}`, tokens), 'the scheme is case-insensitive (RFC 9110)');
    for (const header of [undefined, '', A, `Bearer ${A}x`, `Bearer ${A.slice(0, -1)}`, `Basic ${A}`, 'Bearer '])
      assert.equal(bearerMatches(header, tokens), false, String(header));
    assert.equal(bearerMatches(`Bearer ${A}`, []), false);
  });

  test('generated tokens are 43 base64url characters and parse', () => {
    const [x, y] = [generateToken(), generateToken()];
    assert.notEqual(x, y);
    assert.match(x, /^[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(parseTokenFile(`${x}\n${y}\n`, 'f'), [x, y]);
  });

  test('the file is read again when it changes; a broken change keeps the tokens read before', () => {
    const file = path.join(dir, 'tokens');
    const replace = (text: string) => {
      writeFileSync(`${file}.tmp`, text);
      renameSync(`${file}.tmp`, file);
    };
    replace(`${A}\n`);
    const problems: string[] = [];
    const tokens = tokenFile(file, (m) => problems.push(m));
    assert.deepEqual(tokens(), [A]);
    replace(`${A}\n${B}\n`);
    assert.deepEqual(tokens(), [A, B]);
    replace('tiny\n');
    assert.deepEqual(tokens(), [A, B]);
    tokens();
    assert.equal(problems.length, 1, 'reported once');
    assert.match(
      problems[0] as string,
      /tokens line 1: the token is shorter than 16 characters; still using the tokens/,
    );
    rmSync(file);
    assert.deepEqual(tokens(), [A, B]);
    assert.match(problems[1] as string, /tokens: cannot read the token file \(ENOENT\)/);
    assert.throws(
      () => tokenFile(path.join(dir, 'nope'), () => undefined),
      /nope: cannot read the token file \(ENOENT\)/,
    );
  });
});
