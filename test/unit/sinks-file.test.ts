// test-lane: parallel
// The worker's sinks file: what it holds, what it refuses (and says so), how a keeper's sink is looked up
// (a name; an inline sink of an earlier release only as an equal sink of the file; either only for a keeper
// of a domain the sink lists), and the re-read on change.
import assert from 'node:assert/strict';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { AdminApi } from '../../src/api/types';
import { createKeeperActivities } from '../../src/activities/keeper';
import type { ApplyBundleRequest } from '../../src/activities/sinks';
import { NO_SINKS, SinksFile, describeSinks, lookupSink, parseSinksFile } from '../../src/activities/sinks-file';
import { noopMetrics } from '../../src/observability/metrics';
import { SINK_REFUSED } from '../../src/shared/bundle-keeper';

const FILE = '/etc/docs-admin/sinks.yaml';
const DOCS = 'docs.example.com';
const TEXT = `
allowedDirs: [/srv/docs]
sinks:
  prod-config: {type: file, path: /srv/docs/prod/staticExport.json, mode: "0640", domains: [Docs.Example.com, www.example.com]}
  prod-hook: {type: webhook, url: "https://deploy.example.com/docs?token=HOOKSECRET", domains: [docs.example.com]}
  prod-helm: {type: command, argv: [helm, upgrade, docs, ./chart, -f, "-"], env: [KUBECONFIG], domains: [docs.example.com]}
  old-shell: {type: command, argv: [sh, -c, "helm upgrade docs ./chart"], domains: [docs.example.com]}
  airgap: {type: mirror, dir: /srv/docs/mirror, urlPrefix: "http://mirror.internal/docs", domains: [docs.example.com]}
  outside: {type: file, path: /etc/passwd, domains: [docs.example.com]}
  plain-hook: {type: webhook, url: "http://deploy.example.com/docs", domains: [docs.example.com]}
  bare-mode: {type: file, path: /srv/docs/x.json, mode: 0644, domains: [docs.example.com]}
  no-domains: {type: file, path: /srv/docs/old.json}
  wildcard: {type: file, path: /srv/docs/w.json, domains: ["*.example.com"]}
  empty-domains: {type: file, path: /srv/docs/e.json, domains: []}
  url-domain: {type: file, path: /srv/docs/u.json, domains: ["https://docs.example.com"]}
`;

test('the file holds its valid sinks and names the refused ones with why', () => {
  const table = parseSinksFile(TEXT, FILE);
  assert.deepEqual([...table.sinks.keys()], ['prod-config', 'prod-hook', 'prod-helm', 'old-shell', 'airgap']);
  assert.deepEqual(table.sinks.get('prod-config'), {
    type: 'file',
    path: '/srv/docs/prod/staticExport.json',
    mode: 0o640,
    root: '/srv/docs',
    domains: ['docs.example.com', 'www.example.com'],
  });
  assert.equal((table.sinks.get('airgap') as { mode: number }).mode, 0o600);
  assert.match(table.invalid.get('outside')!, /not under any of allowedDirs/);
  assert.match(table.invalid.get('plain-hook')!, /https \(or set allowHttp: true\)/);
  assert.match(table.invalid.get('bare-mode')!, /quoted octal/);
  // A sinks file of an earlier release lists no domains: each sink is refused, saying what to add.
  assert.match(table.invalid.get('no-domains')!, /lists no domains: add "domains: \[<hostname>, \.\.\.\]"/);
  assert.match(table.invalid.get('wildcard')!, /exact hostnames \(no wildcard such as \*\.example\.com\)/);
  assert.match(table.invalid.get('empty-domains')!, /non-empty list of hostnames/);
  assert.match(table.invalid.get('url-domain')!, /domains: domain must be a bare hostname without a scheme/);
  // The start log: names and types, never a path, URL or argv.
  const line = describeSinks(table);
  assert.match(line, /prod-hook \(webhook\)/);
  assert.doesNotMatch(line, /HOOKSECRET|upgrade|\/srv/);
  assert.throws(() => parseSinksFile('sinks: [a, b]', FILE), /sinks must be a map/);
  assert.throws(() => parseSinksFile('{"sinks": {}, "allowedDirs": ["relative"]}', FILE), /absolute/);
  assert.throws(() => parseSinksFile('sinks: {', FILE), /not YAML or JSON/);
});

test('a keeper names a sink; unknown names and inline sinks are refused, saying what to add', () => {
  const table = parseSinksFile(TEXT, FILE);
  assert.equal((lookupSink(table, 'prod-helm', false, DOCS) as { name: string }).name, 'prod-helm');
  const cases: [unknown, boolean, RegExp, string][] = [
    ['no-domains', false, /sink "no-domains" .* refused: it lists no domains: add "domains:/, 'invalid'],
    ['nope', false, /holds no sink "nope": add it under "sinks:" in \/etc\/docs-admin\/sinks.yaml/, 'unknown'],
    ['outside', false, /sink "outside" .* refused: path \/etc\/passwd is not under/, 'invalid'],
    [{ type: 'command', command: 'id' }, false, /inline command sink is refused: add it to .* under a name/, 'inline'],
    [{ type: 'command', command: 'id' }, true, /same argv \[sh, -c, <its command>\]/, 'inline'],
    [{ type: 'webhook', url: 'http://169.254.169.254/' }, true, /inline webhook sink of an earlier release/, 'inline'],
    [42, false, /must be the name of a sink/, 'inline'],
    ['../etc', false, /is not a sink name/, 'unknown'],
  ];
  for (const [ref, allowInline, reason, code] of cases) {
    const found = lookupSink(table, ref, allowInline, DOCS);
    assert.ok('refused' in found, JSON.stringify(ref));
    assert.match(found.refused, reason);
    assert.equal(found.code, code);
    assert.doesNotMatch(found.refused, /169\.254|HOOKSECRET/);
  }
  assert.match(
    (lookupSink(NO_SINKS.current(), 'x', false, DOCS) as { refused: string }).refused,
    /set KEEPER_SINKS_FILE/,
  );
});

test("a sink serves only the domains it lists: another domain's keeper naming it is refused", () => {
  const table = parseSinksFile(TEXT, FILE);
  // Hostnames compare without case; each listed one is served.
  for (const domain of ['docs.example.com', 'DOCS.example.com', 'www.example.com'])
    assert.equal((lookupSink(table, 'prod-config', false, domain) as { name: string }).name, 'prod-config', domain);
  const refusals: [unknown, boolean, string][] = [
    ['prod-config', false, 'other.example.com'],
    ['prod-hook', false, 'evil.example.net'],
    // A subdomain, or a parent, is another domain.
    ['prod-config', false, 'a.docs.example.com'],
    ['prod-config', false, 'example.com'],
    // An inline sink of an earlier release equal to a sink of the file: the same rule.
    [{ type: 'file', path: '/srv/docs/prod/staticExport.json' }, true, 'other.example.com'],
  ];
  for (const [ref, allowInline, domain] of refusals) {
    const found = lookupSink(table, ref, allowInline, domain);
    assert.ok('refused' in found, `${JSON.stringify(ref)} for ${domain}`);
    assert.equal(found.code, 'domain');
    assert.match(
      found.refused,
      new RegExp(`sink "prod-(config|hook)" does not serve ${domain.replace(/\./g, '\\.')}: add`),
    );
    assert.match(found.refused, /"domains:" in \/etc\/docs-admin\/sinks\.yaml \(KEEPER_SINKS_FILE\) only if/);
    assert.doesNotMatch(found.refused, /HOOKSECRET|staticExport\.json/);
  }
});

test('an inline sink of an earlier release goes on as the equal sink of the file', () => {
  const table = parseSinksFile(TEXT, FILE);
  const equal: [unknown, string][] = [
    [{ type: 'file', path: '/srv/docs/prod/staticExport.json' }, 'prod-config'],
    [{ type: 'webhook', url: 'https://deploy.example.com/docs?token=HOOKSECRET' }, 'prod-hook'],
    [{ type: 'command', command: 'helm upgrade docs ./chart' }, 'old-shell'],
    [{ type: 'mirror', dir: '/srv/docs/mirror', urlPrefix: 'http://mirror.internal/docs' }, 'airgap'],
  ];
  for (const [inline, name] of equal)
    assert.equal((lookupSink(table, inline, true, DOCS) as { name: string }).name, name);
  assert.ok('refused' in lookupSink(table, { type: 'file', path: '/srv/docs/other.json' }, true, DOCS));
});

test('the file is read again when it changes; a broken change keeps the sinks read before', async () => {
  const dir = await fsp.mkdtemp(path.join(tmpdir(), 'sinks-file-'));
  try {
    const file = path.join(dir, 'sinks.yaml');
    await fsp.writeFile(file, 'sinks: {a: {type: command, argv: ["true"], domains: [a.example.com]}}\n');
    const problems: string[] = [];
    const source = new SinksFile(file, (p) => problems.push(p));
    assert.deepEqual([...source.current().sinks.keys()], ['a']);
    await fsp.writeFile(
      file,
      'sinks: {a: {type: command, argv: ["true"], domains: [a.example.com]}, b: {type: command, argv: ["false"], domains: [b.example.com]}}\n',
    );
    assert.deepEqual([...source.current().sinks.keys()], ['a', 'b']);
    await fsp.writeFile(file, 'sinks: {');
    assert.deepEqual([...source.current().sinks.keys()], ['a', 'b']);
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /still using the sinks read before/);
    await fsp.rm(file);
    assert.throws(() => new SinksFile(file), /cannot read the sinks file \(ENOENT\)/);
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
});

test("the keeper's activities refuse a sink for another domain: resolveSink answers why, applyBundle writes nothing", async () => {
  const dir = await fsp.mkdtemp(path.join(tmpdir(), 'sink-domains-'));
  try {
    const target = path.join(dir, 'a.json');
    const file = path.join(dir, 'sinks.yaml');
    await fsp.writeFile(
      file,
      `allowedDirs: [${dir}]\nsinks:\n  site-a: {type: file, path: ${target}, domains: [docs-a.example.com]}\n`,
    );
    const refusals: string[] = [];
    const activities = createKeeperActivities({
      api: {} as AdminApi,
      temporal: {} as Client,
      agentRateLimit: { limit: 100, windowMs: 3_600_000 },
      bundleHosts: [],
      metrics: { ...noopMetrics, sinkRefused: (reason) => refusals.push(reason) },
      sinks: new SinksFile(file),
    });
    const run = <T>(fn: () => Promise<T>) => new MockActivityEnvironment().run(fn) as Promise<T>;
    const bundle = (domain: string): ApplyBundleRequest => ({
      domain,
      sink: 'site-a',
      sinkType: 'file',
      jobId: 'exp_1',
      bundleUrl: 'https://bundles.example.com/exp_1.tar.gz?sig=x',
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      sizeBytes: 10,
      version: null,
    });

    const other = await run(() =>
      activities.resolveSink({ domain: 'docs-b.example.com', sink: 'site-a', allowInline: false }),
    );
    assert.ok('refused' in other);
    assert.match(other.refused, /^sink "site-a" does not serve docs-b\.example\.com/);
    await assert.rejects(
      run(() => activities.applyBundle(bundle('docs-b.example.com'))),
      (err: unknown) =>
        err instanceof ApplicationFailure &&
        err.type === SINK_REFUSED &&
        err.nonRetryable &&
        /sink "site-a" does not serve docs-b\.example\.com/.test(err.message),
    );
    await assert.rejects(fsp.stat(target), 'nothing written for the other domain');
    assert.deepEqual(refusals, ['domain', 'domain']);

    // The domain it lists: resolved and applied.
    assert.deepEqual(
      await run(() => activities.resolveSink({ domain: 'docs-a.example.com', sink: 'site-a', allowInline: false })),
      { name: 'site-a', type: 'file' },
    );
    await run(() => activities.applyBundle(bundle('docs-a.example.com')));
    assert.match(await fsp.readFile(target, 'utf8'), /exp_1\.tar\.gz/);
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
});
