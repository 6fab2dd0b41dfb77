// test-lane: parallel
// scripts/test-output-flush.mjs, which every node --test process loads: a process that writes more than a
// pipe holds and exits at once, as --test-force-exit ends a test file's process, loses nothing of it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

const PRELOAD = path.resolve(__dirname, '../../scripts/test-output-flush.mjs');
/** Far more than a pipe's buffer (64 KiB on Linux). */
const BYTES = 4 * 1024 * 1024;

/** How many of BYTES written to stdout, a pipe, right before process.exit() reach the reader. */
function bytesReceived(nodeArgs: string[]): number {
  const writeAndExit = `process.stdout.write('x'.repeat(${BYTES})); process.exit(0);`;
  const child = spawnSync(process.execPath, [...nodeArgs, '--input-type=module', '-e', writeAndExit], {
    maxBuffer: 2 * BYTES,
  });
  assert.equal(child.status, 0, child.stderr.toString());
  return child.stdout.length;
}

test('what a process writes to its pipe before it exits reaches the reader whole', () => {
  assert.equal(bytesReceived(['--import', PRELOAD]), BYTES);
  // Without it the exit cuts the write (what this guards against; else the test would prove nothing).
  assert.ok(bytesReceived([]) < BYTES, 'without the preload the write is cut short');
});
