// test-lane: cluster-alone (adds node 2 to the shared cluster: its shards move while it joins)
// `npm run cluster -- --nodes 2` on the shared cluster: a second node joins (started if down, never
// stopped here), both serve the one namespace from the shared PostgreSQL, the history shards are split
// between them, and `npm run cluster -- --status --json` shows both. A run with fewer nodes leaves node 2.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { ensureCluster } from '../../scripts/cluster/control';
import { nodeAddress } from '../../scripts/cluster/layout';
import type { ClusterReport } from '../../scripts/cluster/status';
import { ROOT } from '../../scripts/tools';
import { clusterSkipReason, uniqueTaskQueue, waitFor } from '../helpers/temporal';

const run = promisify(execFile);

async function status(): Promise<ClusterReport> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'scripts/cluster.ts', '--status', '--json'], {
    cwd: ROOT,
    timeout: 60_000,
  });
  return JSON.parse(stdout) as ClusterReport;
}

describe('a cluster of two server nodes (npm run cluster -- --nodes 2)', { skip: clusterSkipReason() }, () => {
  const connections: Connection[] = [];
  const client = async (node: number) => {
    const connection = await Connection.connect({ address: nodeAddress(node) });
    connections.push(connection);
    return new Client({ connection });
  };

  before(async () => {
    await ensureCluster({ nodes: 2 });
  });

  after(async () => {
    await Promise.all(connections.map((c) => c.close()));
  });

  test('a second run starts nothing, and a run for one node leaves node 2 running', async () => {
    assert.deepEqual((await ensureCluster({ nodes: 2 })).startedNodes, []);
    assert.deepEqual((await ensureCluster()).startedNodes, []);
    const report = await status();
    assert.equal(report.processes.find((p) => p.node === 2)?.health, 'up');
  });

  test('--status --json shows both nodes up, each with its services, ports and share of the shards', async () => {
    // While node 2 joins, its shards move: the two shares add up to the count once the ring settles.
    const shardSum = (r: ClusterReport) =>
      r.processes.filter((p) => p.process === 'temporal-server').reduce((total, n) => total + (n.shards ?? 0), 0);
    let report = await status();
    await waitFor(async () => shardSum((report = await status())) === report.historyShards, {
      timeoutMs: 60_000,
      intervalMs: 1_000,
      what: 'every shard owned by one node',
    }).catch(() => undefined); // the assertion below says what the last report held
    const nodes = report.processes.filter((p) => p.process === 'temporal-server');
    assert.deepEqual(
      nodes.map((n) => [n.node, n.health, n.ports.frontendGrpc]),
      [
        [1, 'up', 7633],
        [2, 'up', 7733],
      ],
    );
    for (const n of nodes) {
      assert.deepEqual(n.services, ['frontend', 'history', 'matching', 'worker']);
      assert.ok(n.pid && n.pid > 0);
    }
    assert.ok(report.historyShards >= 1);
    assert.equal(
      nodes.reduce((total, n) => total + (n.shards ?? 0), 0),
      report.historyShards,
      'every shard is owned by one node',
    );
    assert.ok(
      ['postgresql', 'temporal-ui', 'codec-server'].every((p) => report.processes.some((x) => x.process === p)),
    );
  });

  test('both frontends serve the one cluster: a workflow started through node 2 is seen through node 1', async () => {
    const [first, second] = [await client(1), await client(2)];
    const taskQueue = uniqueTaskQueue('nodes');
    const workflowId = `${taskQueue}-wf`;
    // No worker polls this queue: the workflow only has to exist, in the shared database.
    const handle = await second.workflow.start('staticExport', {
      taskQueue,
      workflowId,
      args: [{ domain: 'nodes.example.com' }],
    });
    try {
      const seen = await first.workflow.getHandle(workflowId).describe();
      assert.equal(seen.runId, handle.firstExecutionRunId);
      assert.equal(seen.status.name, 'RUNNING');
    } finally {
      await handle.terminate('cluster-nodes test done');
    }
  });
});
