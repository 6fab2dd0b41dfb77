// test-lane: parallel
// test/helpers/bundle-cache.ts: the workflow bundles a test run's processes share. A bundle is made once
// per key (its options and the code under src/ and test/), read back after, never shared across options.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, test } from 'node:test';
import type { BundleOptions, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import {
  BUNDLE_CACHE_ENV,
  bundleCacheEnv,
  bundleCacheNodeArgs,
  bundleKey,
  cachedBundle,
} from '../helpers/bundle-cache';

const ROOT = path.resolve(__dirname, '../..');
const OPTIONS: BundleOptions = { workflowsPath: path.join(ROOT, 'src/workflows') };
let dir: string;
let made: BundleOptions[];
const bundle = async (options: BundleOptions): Promise<WorkflowBundleWithSourceMap> => {
  made.push(options);
  await new Promise((resolve) => setTimeout(resolve, 50));
  return { code: `// bundle ${made.length} of ${options.failureConverterPath ?? 'plain'}`, sourceMap: '' };
};

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'bundle-cache-test-'));
  made = [];
  process.env[BUNDLE_CACHE_ENV] = dir;
});
afterEach(() => {
  delete process.env[BUNDLE_CACHE_ENV];
  rmSync(dir, { recursive: true, force: true });
});

test('a bundle is made once and read back after; other options make their own', async () => {
  const first = await cachedBundle(OPTIONS, bundle);
  assert.equal((await cachedBundle({ ...OPTIONS }, bundle)).code, first.code);
  const encrypted = await cachedBundle({ ...OPTIONS, failureConverterPath: '/x/failure-converter.ts' }, bundle);
  assert.notEqual(encrypted.code, first.code);
  assert.equal(made.length, 2);
});

test('callers asking at once share one bundle: the others wait for the first', async () => {
  const codes = await Promise.all([1, 2, 3].map(() => cachedBundle(OPTIONS, bundle)));
  assert.equal(made.length, 1);
  assert.deepEqual(new Set(codes.map((b) => b.code)).size, 1);
});

test('without the variable, or with options holding code, every call bundles', async () => {
  await cachedBundle({ ...OPTIONS, webpackConfigHook: (config) => config }, bundle);
  await cachedBundle({ ...OPTIONS, webpackConfigHook: (config) => config }, bundle);
  assert.equal(bundleKey({ ...OPTIONS, webpackConfigHook: (config) => config }), undefined);
  delete process.env[BUNDLE_CACHE_ENV];
  assert.deepEqual([bundleCacheNodeArgs(), bundleCacheEnv()], [[], {}]);
  await cachedBundle(OPTIONS, bundle);
  await cachedBundle(OPTIONS, bundle);
  assert.equal(made.length, 4);
});

test("a spawned process given bundleCacheNodeArgs() reads the SDK's bundleWorkflowCode from the cache", async () => {
  const key = bundleKey(OPTIONS);
  assert.ok(key);
  writeFileSync(path.join(dir, `${key}.json`), JSON.stringify({ code: '// from the cache', sourceMap: '' }));
  const script = `require('@temporalio/worker').bundleWorkflowCode(${JSON.stringify(OPTIONS)}).then((b) => console.log(b.code))`;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', ...bundleCacheNodeArgs(), '--eval', script],
    { cwd: ROOT, env: { ...process.env, ...bundleCacheEnv() }, timeout: 60_000 },
  );
  assert.equal(stdout.trim(), '// from the cache');
});
