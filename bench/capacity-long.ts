// The capacity model's check of a derived figure against one real run: one agent job lasting
// CAPACITY_LONG_MS (default 30 min) through the product and one through the naive shape, each on its
// own worker process, on the cluster (namespace docs-admin-capacity). Writes the workflow ids and the
// worker processes' CPU to bench/results/capacity-long-run.json; `npx tsx bench/capacity.ts` reads it.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { startEmulator } from '../emulator';
import { WorkerProcess, readUsage } from '../test/chaos/helpers';
import { CAPACITY_NAMESPACE, CLUSTER, fleetEnv, naiveWorkerOptions } from './lib/capacity-fleet';

async function main(): Promise<void> {
  const activeMs = Number(process.env.CAPACITY_LONG_MS ?? 30 * 60_000);
  const emu = await startEmulator({ port: 0, agentActiveMs: activeMs });
  const tag = `long-${Date.now().toString(36)}`;
  const ours = await WorkerProcess.start({ env: fleetEnv(emu.url, `cap-${tag}-ours`) });
  const naive = await WorkerProcess.start(naiveWorkerOptions(emu.url, `cap-${tag}-naive`));
  const connection = await Connection.connect({ address: CLUSTER });
  const client = new Client({ connection, namespace: CAPACITY_NAMESPACE });
  const input = { projectId: `cap-${tag}`, prompt: `Long job ${tag}` };
  const cpu0 = [readUsage(ours.pid)?.cpuSeconds ?? 0, readUsage(naive.pid)?.cpuSeconds ?? 0];
  const a = await client.workflow.start('agentJob', {
    taskQueue: `cap-${tag}-ours`,
    workflowId: `${tag}-ours`,
    args: [input],
  });
  const b = await client.workflow.start('naiveAgent', {
    taskQueue: `cap-${tag}-naive`,
    workflowId: `${tag}-naive`,
    args: [{ ...input, prompt: `${input.prompt} (naive)` }],
  });
  const startedAt = Date.now();
  await Promise.all([a.result(), b.result()]);
  const cpu1 = [readUsage(ours.pid)?.cpuSeconds ?? 0, readUsage(naive.pid)?.cpuSeconds ?? 0];
  const out = {
    activeMs,
    wallMs: Date.now() - startedAt,
    ours: { workflowId: a.workflowId, projectId: input.projectId, workerCpuS: cpu1[0]! - cpu0[0]! },
    naive: { workflowId: b.workflowId, workerCpuS: cpu1[1]! - cpu0[1]! },
  };
  writeFileSync(path.join(__dirname, 'results', 'capacity-long-run.json'), `${JSON.stringify(out, null, 2)}\n`);
  console.log(JSON.stringify(out));
  await Promise.all([ours.kill(), naive.kill()]);
  await connection.close();
  await emu.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
