// Workflow bundles shared by the processes of a test run: webpack takes seconds of CPU per bundle, and
// `npm test` makes the same few bundles in dozens of test files and spawned worker processes. On when
// DOCS_ADMIN_TEST_BUNDLE_CACHE names a folder (scripts/run-tests.ts sets it). A bundle is kept under a
// key of everything it is made from: the bundle options and the content of every code file under src/
// and test/ and of package-lock.json, so a cached bundle is the one bundleWorkflowCode would make now.
// The first process that misses makes it (the SDK's bundler, unchanged); the others wait for its file.
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
} from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { BundleOptions, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { waitFor } from '../../scripts/wait';

const ROOT = path.resolve(__dirname, '../..');
export const BUNDLE_CACHE_ENV = 'DOCS_ADMIN_TEST_BUNDLE_CACHE';
/** The preload that gives a spawned worker process the cache (node --import tsx --import <this>). */
export const BUNDLE_CACHE_PRELOAD = path.join(__dirname, 'bundle-cache-preload.mjs');
/** A bundle no run has used for this long is of code that changed since: removed. */
const UNUSED_MS = 24 * 60 * 60_000;
/** A lock older than this is a bundler that died: taken over. */
const STALE_LOCK_MS = 5 * 60_000;
const CODE = /\.(?:[cm]?[jt]s|json)$/;

type Bundle = (options: BundleOptions) => Promise<WorkflowBundleWithSourceMap>;
/** Set while this process makes a bundle: a bundler that goes through the cache again (the preload's) just bundles. */
const making = new AsyncLocalStorage<boolean>();

/** Node options that give a spawned process the cache, when this one has it (none otherwise). */
export function bundleCacheNodeArgs(): string[] {
  return process.env[BUNDLE_CACHE_ENV] ? ['--import', BUNDLE_CACHE_PRELOAD] : [];
}

/** The variable a spawned process needs beside bundleCacheNodeArgs() (its env is built from scratch). */
export function bundleCacheEnv(): Record<string, string> {
  const dir = process.env[BUNDLE_CACHE_ENV];
  return dir ? { [BUNDLE_CACHE_ENV]: dir } : {};
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && CODE.test(entry.name))
    .map((entry) => path.join(entry.parentPath ?? (entry as { path: string }).path, entry.name))
    .sort();
}

let sources: string | undefined;
/** One digest of the code a bundle may be made from, read once per process. */
function sourcesDigest(): string {
  if (sources) return sources;
  const hash = createHash('sha256');
  for (const file of [
    ...filesUnder(path.join(ROOT, 'src')),
    ...filesUnder(path.join(ROOT, 'test')),
    path.join(ROOT, 'package-lock.json'),
  ])
    hash
      .update(`${path.relative(ROOT, file)}\0`)
      .update(readFileSync(file))
      .update('\0');
  sources = hash.digest('hex');
  return sources;
}

/** The cache key of a bundle, or undefined when its options hold code (a hook or plugins) that no key can name. */
export function bundleKey(options: BundleOptions): string | undefined {
  if (options.webpackConfigHook || options.plugins?.length) return undefined;
  const { logger: _logger, ...named } = options;
  // Keys sorted: the same options given in another order are the same bundle.
  const settings = JSON.stringify(named, Object.keys(named).sort());
  return createHash('sha256')
    .update(JSON.stringify([ROOT, process.version, sourcesDigest(), settings]))
    .digest('hex')
    .slice(0, 32);
}

/** The bundle in `file`, marked used (its time is what prune() goes by), or undefined. */
function read(file: string): WorkflowBundleWithSourceMap | undefined {
  try {
    const bundle = JSON.parse(readFileSync(file, 'utf8')) as WorkflowBundleWithSourceMap;
    const now = new Date();
    utimesSync(file, now, now);
    return bundle;
  } catch {
    return undefined;
  }
}

/** Takes the lock of a key (true), or false while another process holds it. */
function lock(file: string): boolean {
  try {
    closeSync(openSync(file, 'wx'));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const age = Date.now() - (statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
    if (age > STALE_LOCK_MS) rmSync(file, { force: true });
    return false;
  }
}

function prune(dir: string): void {
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    const mtimeMs = statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
    if (name.endsWith('.json') && Date.now() - mtimeMs > UNUSED_MS) rmSync(file, { force: true });
  }
}

/**
 * bundle(options) through the cache folder DOCS_ADMIN_TEST_BUNDLE_CACHE names: read when there, else
 * made by this process (others wait for it) and written. Without the variable: bundle(options).
 */
export async function cachedBundle(options: BundleOptions, bundle: Bundle): Promise<WorkflowBundleWithSourceMap> {
  const dir = process.env[BUNDLE_CACHE_ENV];
  const key = dir && !making.getStore() ? bundleKey(options) : undefined;
  if (!dir || !key) return bundle(options);
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${key}.json`);
  const lockFile = path.join(dir, `${key}.lock`);
  const found = await waitFor(() => read(file) ?? (lock(lockFile) ? 'mine' : undefined), {
    timeoutMs: 2 * STALE_LOCK_MS,
    intervalMs: 200,
    what: `the workflow bundle ${key} another test process makes`,
  });
  if (found !== 'mine') return found;
  try {
    const made = await making.run(true, () => bundle(options));
    const partial = `${file}.${process.pid}`;
    await writeFile(partial, JSON.stringify({ code: made.code, sourceMap: made.sourceMap }));
    renameSync(partial, file);
    prune(dir);
    return made;
  } finally {
    rmSync(lockFile, { force: true });
  }
}
