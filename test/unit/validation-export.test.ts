// test-lane: parallel
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { exportInputProblems, hostnameProblem, normalizeExportInput } from '../../src/policies/validation/export';

describe('hostnameProblem', () => {
  test('accepts bare hostnames', () => {
    for (const domain of ['docs.example.com', 'acme.mintlify.app', 'localhost', 'a-b.c1.io', 'DOCS.Example.COM']) {
      assert.equal(hostnameProblem(domain), null, domain);
    }
  });

  test('rejects schemes, paths, ports, whitespace and malformed labels, naming the problem', () => {
    const cases: [unknown, RegExp][] = [
      ['https://docs.example.com', /scheme/],
      ['docs.example.com/guide', /path/],
      ['docs.example.com?x=1', /path/],
      ['docs.example.com:443', /port/],
      ['docs example.com', /whitespace/],
      ['', /empty/],
      ['-docs.example.com', /not a valid hostname/],
      ['docs..example.com', /not a valid hostname/],
      ['docs.example.com.', /not a valid hostname/],
      ['docs_site.example.com', /not a valid hostname/],
      [`${'a'.repeat(64)}.com`, /not a valid hostname/],
      ['a.'.repeat(127) + 'com', /253/],
      [42, /string/],
      [undefined, /string/],
    ];
    for (const [domain, expected] of cases) {
      assert.match(hostnameProblem(domain) ?? 'VALID', expected, String(domain));
    }
  });
});

describe('exportInputProblems', () => {
  test('a minimal and a full input are valid', () => {
    assert.deepEqual(exportInputProblems({ domain: 'docs.example.com' }), []);
    assert.deepEqual(
      exportInputProblems({ domain: 'docs.example.com', version: 'v2', paths: ['/guide', 'api/intro'] }),
      [],
    );
  });

  test('null optional fields count as absent; unknown fields are ignored', () => {
    assert.deepEqual(exportInputProblems({ domain: 'docs.example.com', version: null, paths: null, extra: 1 }), []);
  });

  test('reports every problem at once', () => {
    const problems = exportInputProblems({ domain: 'https://x', version: '  ', paths: ['ok', '', 3] });
    assert.equal(problems.length, 4);
    assert.match(problems[0]!, /scheme/);
    assert.match(problems[1]!, /version/);
    assert.match(problems[2]!, /paths\[1\]/);
    assert.match(problems[3]!, /paths\[2\]/);
  });

  test('rejects an empty paths array and a non-array', () => {
    assert.match(exportInputProblems({ domain: 'd.io', paths: [] })[0]!, /must not be empty/);
    assert.match(exportInputProblems({ domain: 'd.io', paths: '/guide' })[0]!, /array/);
  });

  test('rejects a non-object input', () => {
    for (const input of [null, 'docs.example.com', [], 7]) {
      assert.match(exportInputProblems(input)[0]!, /must be an object/);
    }
  });
});

test('normalizeExportInput keeps only known, present fields', () => {
  const input = { domain: 'd.io', version: undefined, paths: ['/a'], junk: true } as never;
  assert.deepEqual(normalizeExportInput(input), { domain: 'd.io', paths: ['/a'] });
});
