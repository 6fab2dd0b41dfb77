// test-lane: parallel
// The worker's sinks file: what it holds, what it refuses (and says so), how a keeper's sink is looked up
// (a name; an inline sink of an earlier release only as an equal sink of the file), and the re-read on change.
import assert from 'node:assert/strict';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { NO_SINKS, SinksFile, describeSinks, lookupSink, parseSinksFile } from '../../src/activities/sinks-file';

const FILE = '/etc/docs-admin/sinks.yaml';
const TEXT = `
allowedDirs: [/srv/docs]
sinks:
  prod-config: {type: file, path: /srv/docs/prod/staticExport.json, mode: "0640"}
  prod-hook: {type: webhook, url: "https://deploy.example.com/docs?token=HOOKSECRET"}
  prod-helm: {type: command, argv: [helm, upgrade, docs, ./chart, -f, "-"], env: [KUBECONFIG]}
  old-shell: {type: command, argv: [sh, -c, "helm upgrade docs ./chart"]}
  airgap: {type: mirror, dir: /srv/docs/mirror, urlPrefix: "http://mirror.internal/docs"}
  outside: {type: file, path: /etc/passwd}
  plain-hook: {type: webhook, url: "http://deploy.example.com/docs"}
  bare-mode: {type: file, path: /srv/docs/x.json, mode: 0644}
`;

test('the file holds its valid sinks and names the refused ones with why', () => {
  const table = parseSinksFile(TEXT, FILE);
  assert.deepEqual([...table.sinks.keys()], ['prod-config', 'prod-hook', 'prod-helm', 'old-shell', 'airgap']);
  assert.deepEqual(table.sinks.get('prod-config'), {
    type: 'file',
    path: '/srv/docs/prod/staticExport.json',
    mode: 0o640,
    root: '/srv/docs',
  });
  assert.equal((table.sinks.get('airgap') as { mode: number }).mode, 0o600);
  assert.match(table.invalid.get('outside')!, /not under any of allowedDirs/);
  assert.match(table.invalid.get('plain-hook')!, /https \(or set allowHttp: true\)/);
  assert.match(table.invalid.get('bare-mode')!, /quoted octal/);
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
  assert.equal((lookupSink(table, 'prod-helm', false) as { name: string }).name, 'prod-helm');
  const cases: [unknown, boolean, RegExp, string][] = [
    ['nope', false, /holds no sink "nope": add it under "sinks:" in \/etc\/docs-admin\/sinks.yaml/, 'unknown'],
    ['outside', false, /sink "outside" .* refused: path \/etc\/passwd is not under/, 'invalid'],
    [{ type: 'command', command: 'id' }, false, /inline command sink is refused: add it to .* under a name/, 'inline'],
    [{ type: 'command', command: 'id' }, true, /same argv \[sh, -c, <its command>\]/, 'inline'],
    [{ type: 'webhook', url: 'http://169.254.169.254/' }, true, /inline webhook sink of an earlier release/, 'inline'],
    [42, false, /must be the name of a sink/, 'inline'],
    ['../etc', false, /is not a sink name/, 'unknown'],
  ];
  for (const [ref, allowInline, reason, code] of cases) {
    const found = lookupSink(table, ref, allowInline);
    assert.ok('refused' in found, JSON.stringify(ref));
    assert.match(found.refused, reason);
    assert.equal(found.code, code);
    assert.doesNotMatch(found.refused, /169\.254|HOOKSECRET/);
  }
  assert.match((lookupSink(NO_SINKS.current(), 'x', false) as { refused: string }).refused, /set KEEPER_SINKS_FILE/);
});

test('an inline sink of an earlier release goes on as the equal sink of the file', () => {
  const table = parseSinksFile(TEXT, FILE);
  const equal: [unknown, string][] = [
    [{ type: 'file', path: '/srv/docs/prod/staticExport.json' }, 'prod-config'],
    [{ type: 'webhook', url: 'https://deploy.example.com/docs?token=HOOKSECRET' }, 'prod-hook'],
    [{ type: 'command', command: 'helm upgrade docs ./chart' }, 'old-shell'],
    [{ type: 'mirror', dir: '/srv/docs/mirror', urlPrefix: 'http://mirror.internal/docs' }, 'airgap'],
  ];
  for (const [inline, name] of equal) assert.equal((lookupSink(table, inline, true) as { name: string }).name, name);
  assert.ok('refused' in lookupSink(table, { type: 'file', path: '/srv/docs/other.json' }, true));
});

test('the file is read again when it changes; a broken change keeps the sinks read before', async () => {
  const dir = await fsp.mkdtemp(path.join(tmpdir(), 'sinks-file-'));
  try {
    const file = path.join(dir, 'sinks.yaml');
    await fsp.writeFile(file, 'sinks: {a: {type: command, argv: ["true"]}}\n');
    const problems: string[] = [];
    const source = new SinksFile(file, (p) => problems.push(p));
    assert.deepEqual([...source.current().sinks.keys()], ['a']);
    await fsp.writeFile(file, 'sinks: {a: {type: command, argv: ["true"]}, b: {type: command, argv: ["false"]}}\n');
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
