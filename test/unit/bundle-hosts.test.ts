// test-lane: parallel
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  bundleHostRules,
  bundleLinkProblem,
  parseHostRule,
  parseHostRules,
  privateBundleHosts,
} from '../../src/policies/bundle-hosts';
import { loadWorkerConfig } from '../../src/config';

describe('BUNDLE_ALLOWED_HOSTS entries', () => {
  test('host, host:port, *.domain and [IPv6]:port, normalized as a link normalizes its host', () => {
    assert.deepEqual(parseHostRule('Storage.Example.com'), { host: 'storage.example.com', subdomains: false });
    assert.deepEqual(parseHostRule('minio.internal:9000'), { host: 'minio.internal', subdomains: false, port: 9000 });
    assert.deepEqual(parseHostRule('*.s3.amazonaws.com'), { host: 's3.amazonaws.com', subdomains: true });
    assert.deepEqual(parseHostRule('[FD00::1]:9000'), { host: 'fd00::1', subdomains: false, port: 9000 });
    assert.deepEqual(parseHostRule('0x7f.1'), { host: '127.0.0.1', subdomains: false });
    assert.deepEqual(parseHostRules(' a.example.com, b.example.com:8443\n*.c.example.com '), [
      { host: 'a.example.com', subdomains: false },
      { host: 'b.example.com', subdomains: false, port: 8443 },
      { host: 'c.example.com', subdomains: true },
    ]);
    assert.deepEqual(parseHostRules(''), []);
  });

  test('a URL, a path, credentials, a bad port or a wildcard too wide are refused, naming the entry', () => {
    for (const [entry, why] of [
      ['https://storage.example.com', /not host, host:port or \*\.domain/],
      ['storage.example.com/bundles', /not host/],
      ['user:pw@storage.example.com', /not host/],
      ['storage.example.com:0', /port must be 1-65535/],
      ['storage.example.com:70000', /port must be 1-65535/],
      ['*.com', /wildcard needs a domain of two labels/],
      ['*.10.0.0.1', /wildcard/],
      ['a.*.example.com', /not host/],
    ] as const)
      assert.throws(() => parseHostRule(entry), why, entry);
  });

  test('the worker config reads it, and names the variable for a bad entry', () => {
    const base = { ADMIN_API_URL: 'http://127.0.0.1:4010', ADMIN_API_KEY: 'mint_config_test_key_0123456789' };
    assert.deepEqual(loadWorkerConfig(base).bundleAllowedHosts, []);
    assert.deepEqual(loadWorkerConfig({ ...base, BUNDLE_ALLOWED_HOSTS: '*.example.net' }).bundleAllowedHosts, [
      { host: 'example.net', subdomains: true },
    ]);
    assert.throws(
      () => loadWorkerConfig({ ...base, BUNDLE_ALLOWED_HOSTS: 'https://x.example.net/' }),
      /BUNDLE_ALLOWED_HOSTS: "https:\/\/x\.example\.net\/" is not host/,
    );
  });
});

describe('which links may be fetched', () => {
  const rules = bundleHostRules('http://127.0.0.1:4010', parseHostRules('storage.example.com, *.cdn.example.net'));

  test("the admin API's own host and port, and the listed hosts on their scheme's default port", () => {
    for (const link of [
      'http://127.0.0.1:4010/bundles/j.tar.gz?sig=x',
      'https://storage.example.com/b/j.tar.gz?X-Amz-Signature=x',
      'http://storage.example.com/b/j.tar.gz',
      'https://eu.cdn.example.net/j.tar.gz',
      'https://a.b.cdn.example.net/j.tar.gz',
    ])
      assert.equal(bundleLinkProblem(link, rules), undefined, link);
  });

  test('another port of the same host, another host, the metadata address: named by host and port, never by path or query', () => {
    const cases: [string, string][] = [
      ['http://127.0.0.1:4011/bundles/j.tar.gz?sig=SECRET', '127.0.0.1:4011'],
      ['http://169.254.169.254/latest/meta-data/?sig=SECRET', '169.254.169.254'],
      ['https://storage.example.com:8443/j.tar.gz?sig=SECRET', 'storage.example.com:8443'],
      ['https://cdn.example.net/j.tar.gz?sig=SECRET', 'cdn.example.net'],
      ['https://storage.example.com.evil.example/j?sig=SECRET', 'storage.example.com.evil.example'],
      ['http://[::1]:4010/j?sig=SECRET', '[::1]:4010'],
    ];
    for (const [link, named] of cases) {
      const problem = bundleLinkProblem(link, rules);
      assert.equal(problem, `host ${named} is neither the admin API's nor listed in BUNDLE_ALLOWED_HOSTS`, link);
    }
    assert.match(bundleLinkProblem('file:///etc/passwd', rules)!, /scheme file: is not http\(s\)/);
    assert.equal(bundleLinkProblem('not a link', rules), 'the link is not a URL');
    assert.match(bundleLinkProblem('https://storage.example.com/j', [])!, /neither/, 'no rules: nothing');
  });

  test('an https admin API allows its default port only; exact hosts may be private, wildcards may not', () => {
    const real = bundleHostRules('https://api.mintlify.com', []);
    assert.equal(bundleLinkProblem('https://api.mintlify.com/b?sig=x', real), undefined);
    assert.match(bundleLinkProblem('http://api.mintlify.com/b', real)!, /host api\.mintlify\.com is neither/);
    assert.deepEqual(privateBundleHosts(rules), ['127.0.0.1', 'storage.example.com']);
  });
});
