// test-lane: parallel
// The pure parts of `npm run cluster -- --nodes N | --status`: the port plan, the argument parsing,
// the status lines and the history shard setting.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openNotice, parseClusterArgs, UsageError } from '../../scripts/cluster/args';
import { CLUSTER_PORTS, MAX_NODES, nodeAddress, nodeFiles, nodePortEnv, nodePorts } from '../../scripts/cluster/layout';
import { formatPorts, formatStatus, type ClusterReport } from '../../scripts/cluster/status';
import { historyShardsFor, parseHistoryShards } from '../../scripts/cluster/shards';

test('node 1 keeps the ports the cluster always had; node n is 100 * (n - 1) above', () => {
  const first = nodePorts(1);
  assert.equal(first.frontendGrpc, 7633);
  assert.equal(first.metrics, 9633);
  assert.equal(nodeAddress(1), '127.0.0.1:7633');
  assert.equal(nodePorts(2).frontendGrpc, 7733);
  assert.equal(nodePorts(2).metrics, 9733);
  assert.equal(nodePorts(2).historyMembership, 6734);
  assert.deepEqual(nodeFiles(1).state, nodeFiles(1).state);
  assert.match(nodeFiles(2).log, /temporal-server-2\.log$/);
});

test('no two ports of any nodes collide, nor with PostgreSQL, the UI or the codec server', () => {
  const taken = new Map<number, string>();
  for (const [name, port] of [
    ['postgres', CLUSTER_PORTS.postgres],
    ['ui', CLUSTER_PORTS.ui],
    ['codec', CLUSTER_PORTS.codecServer],
  ] as const)
    taken.set(port, name);
  for (let node = 1; node <= MAX_NODES; node++) {
    for (const [name, port] of Object.entries(nodePorts(node))) {
      assert.ok(!taken.has(port), `node ${node} ${name} ${port} collides with ${taken.get(port)}`);
      taken.set(port, `node ${node} ${name}`);
    }
  }
  assert.throws(() => nodePorts(0), RangeError);
  assert.throws(() => nodePorts(MAX_NODES + 1), RangeError);
});

test("every node names node 1's frontend as the cluster's address (one record in the database)", () => {
  const env = nodePortEnv(3);
  assert.equal(env.FRONTEND_GRPC_PORT, '7833');
  assert.equal(env.CLUSTER_RPC_PORT, '7633');
  assert.equal(env.CLUSTER_HTTP_PORT, '7643');
  assert.equal(env.PROMETHEUS_ENDPOINT, '127.0.0.1:9833');
});

test('arguments: --nodes, --status [--json], --stop, --history-shards, and what is refused', () => {
  const plain = { action: 'up', nodes: 1, tuned: false, tls: false, sso: false, monitoring: false };
  assert.deepEqual(parseClusterArgs([]), plain);
  assert.deepEqual(parseClusterArgs(['--nodes', '2', '--tls']), { ...plain, nodes: 2, tls: true });
  assert.deepEqual(parseClusterArgs(['--sso', '--tls']), { ...plain, tls: true, sso: true });
  assert.throws(() => parseClusterArgs(['--status', '--sso']), /--status only reports \(--sso\)/);
  assert.equal((parseClusterArgs(['--nodes=3']) as { nodes: number }).nodes, 3);
  assert.deepEqual(parseClusterArgs(['--history-shards', '16']), { ...plain, historyShards: 16 });
  assert.deepEqual(parseClusterArgs(['--status', '--json']), { action: 'status', json: true });
  assert.deepEqual(parseClusterArgs(['--status']), { action: 'status', json: false });
  assert.deepEqual(parseClusterArgs(['--stop']), { action: 'stop' });
  for (const bad of [
    ['--nodes'],
    ['--nodes', '0'],
    ['--nodes', '10'],
    ['--nodes', 'two'],
    ['--stop', '--tls'],
    ['--status', '--nodes', '2'],
    ['--json'],
    ['--history-shards', '0'],
    ['--frobnicate'],
    ['--tls=yes'],
  ])
    assert.throws(() => parseClusterArgs(bad), UsageError, bad.join(' '));
  assert.equal(parseHistoryShards('512'), 512);
});

test('status: one aligned line per process, the shards each node owns, then the shard count', () => {
  const report: ClusterReport = {
    processes: [
      { process: 'postgresql', services: [], pid: 10, ports: { postgres: 5633 }, health: 'up' },
      {
        process: 'temporal-server',
        node: 1,
        services: ['frontend', 'history', 'matching', 'worker'],
        pid: 11,
        ports: { ...nodePorts(1) },
        health: 'up',
        shards: 2,
      },
      {
        process: 'temporal-server',
        node: 2,
        services: ['frontend', 'history', 'matching', 'worker'],
        ports: { ...nodePorts(2) },
        health: 'down',
      },
    ],
    historyShards: 4,
  };
  const lines = formatStatus(report);
  assert.equal(lines.length, 4);
  assert.match(lines[1]!, /^node 1 +frontend,history,matching,worker +pid 11 +up, 2 shards +grpc 7633 http 7643/);
  assert.match(lines[2]!, /^node 2 .* - +down +grpc 7733/);
  assert.equal(lines[1]!.indexOf('grpc'), lines[2]!.indexOf('grpc'), 'columns line up');
  assert.match(lines[3]!, /^history shards: 4 /);
  const { internalFrontendGrpc: _g, internalFrontendHttp: _h, internalFrontendMembership: _m, ...plain } = nodePorts(2);
  assert.equal(
    formatPorts(plain),
    'grpc 7733 http 7743 history 7734 matching 7735 worker 7739 membership 6733/6734/6735/6739 metrics 9733 pprof 7736',
  );
  assert.equal(formatPorts({ http: 8633 }), '8633');
});

test('history shards: an existing cluster keeps its count; asking another is refused, saying how to get one', () => {
  const current = historyShardsFor(undefined, true);
  assert.equal(historyShardsFor(current, true), current);
  assert.throws(() => historyShardsFor(current * 2, true), /fixed at creation.*--stop.*--history-shards/s);
});

test('npm run cluster says in one line what it leaves open, and nothing once --tls --sso closes it', () => {
  assert.equal(
    openNotice({ tls: false, sso: false }),
    'open: no TLS, no sign-on, on loopback only; `--tls --sso` closes it',
  );
  assert.equal(openNotice({ tls: true, sso: false }), 'open: no sign-on, on loopback only; `--tls --sso` closes it');
  assert.equal(openNotice({ tls: false, sso: true }), 'open: no TLS, on loopback only; `--tls --sso` closes it');
  assert.equal(openNotice({ tls: true, sso: true }), null);
});
