// test-lane: parallel
// The shipped Prometheus rules (deploy/prometheus/alerts.yml): valid, their promtool unit tests pass,
// every alert is unit-tested and has a runbook entry (docs/runbook.md, a heading per alert name).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { test } from 'node:test';
import { parse } from 'yaml';

const ROOT = path.resolve(__dirname, '../..');
const RULES = path.join(ROOT, 'deploy/prometheus/alerts.yml');
const RULE_TESTS = path.join(ROOT, 'deploy/prometheus/alerts.test.yml');
const run = promisify(execFile);

interface RuleFile {
  groups: { name: string; rules: { alert?: string; record?: string; expr: string }[] }[];
}

function alertNames(): string[] {
  const rules = parse(readFileSync(RULES, 'utf8')) as RuleFile;
  return rules.groups.flatMap((g) => g.rules.flatMap((r) => (r.alert ? [r.alert] : [])));
}

async function promtool(...args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await run('promtool', args, { cwd: ROOT });
    return stdout + stderr;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stdout?: string; stderr?: string };
    if (e.code === 'ENOENT')
      assert.fail("promtool not found: install Debian's prometheus package (apt-get install -y prometheus)");
    assert.fail(`promtool ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

test('promtool accepts the rules and their unit tests pass', async () => {
  assert.match(await promtool('check', 'rules', RULES), /SUCCESS/);
  // docker-compose.yml's Prometheus config, and the rule files it names.
  assert.match(await promtool('check', 'config', path.join(ROOT, 'deploy/prometheus/prometheus.yml')), /SUCCESS/);
  assert.match(await promtool('test', 'rules', RULE_TESTS), /SUCCESS/);
});

test('every alert is unit-tested and has a runbook entry', () => {
  const tests = parse(readFileSync(RULE_TESTS, 'utf8')) as {
    tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
  };
  const firing = new Set(
    tests.tests.flatMap((t) =>
      (t.alert_rule_test ?? []).filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname),
    ),
  );
  const runbook = readFileSync(path.join(ROOT, 'docs/runbook.md'), 'utf8');
  const names = alertNames();
  assert.ok(names.length >= 7, `alerts: ${names.join(', ')}`);
  for (const name of names) {
    assert.ok(firing.has(name), `${name} has a promtool test in which it fires`);
    assert.match(runbook, new RegExp(`^## ${name}$`, 'm'), `docs/runbook.md has a "## ${name}" section`);
  }
});
