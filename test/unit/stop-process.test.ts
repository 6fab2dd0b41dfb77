// test-lane: parallel
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { test } from 'node:test';
import { isAlive, processState, stopProcess } from '../../scripts/stop-process';
import { waitFor } from '../../scripts/wait';

/** A `sleep` whose parent shell has exited: PID 1 owns it, as a cluster node started by an earlier command. */
function orphanSleep(): number {
  return Number(execFileSync('bash', ['-c', 'sleep 30 >/dev/null 2>&1 & echo $!'], { encoding: 'utf8' }));
}

test('a killed orphan that PID 1 has not reaped (a zombie) is not alive, and its stop returns', async (t) => {
  const pid = orphanSleep();
  assert.ok(isAlive(pid));
  process.kill(pid, 'SIGKILL');
  const state = await waitFor(() => ['Z', 'gone'].find((s) => s === (processState(pid) ?? 'gone')), {
    what: 'the kill',
  });
  // Where PID 1 is no init (containers, this machine's VM) the zombie stays: a stop once waited on it forever.
  if (state === 'Z') assert.equal(isAlive(pid), false, 'a zombie does not run');
  else t.diagnostic('reaped at once here: no zombie to look at');
  await stopProcess(pid, { signal: 'SIGKILL' });
});

test('a process that ignores SIGTERM is SIGKILLed after its grace time', async () => {
  const child = spawn('bash', ['-c', "trap '' TERM; echo ready; while :; do sleep 0.1; done"], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  await new Promise((resolve) => child.stdout.once('data', resolve));
  const started = Date.now();
  await stopProcess(child.pid!, { graceMs: 300 });
  assert.equal(isAlive(child.pid!), false);
  assert.ok(Date.now() - started >= 300, 'it had its grace time');
});
