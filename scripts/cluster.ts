// `npm run cluster`: a production-shaped Temporal on 127.0.0.1, built and run natively: PostgreSQL
// (persistence and SQL visibility), the Temporal server of scripts/cluster/go.mod (1.32.2) with
// production-default dynamic config, the namespace and search attributes, and the Web UI. The first run
// builds the binaries (scripts/tools.ts) and creates the database; later runs find what is running and
// start only what is down. Everything is in the background; logs and data in .data/cluster/
// (DOCS_ADMIN_CLUSTER_DIR). A data folder of an older server release is upgraded one minor version at a
// time, schema first, each step said as it goes (scripts/cluster/upgrade.ts, docs/operations.md);
// DOCS_ADMIN_CLUSTER_RELEASE runs an older release of scripts/cluster/releases/ instead (the upgrade check).
//   --nodes N  N server nodes sharing the PostgreSQL, each running every service on its own ports
//             (node n: node 1's ports + 100 * (n - 1)); starts the nodes that are down, stops none
//   --history-shards N  the history shard count of a cluster this run creates (default 4; fixed after)
//   --tuned   add the dev server's dynamic config (DEV_SERVER_DYNAMIC_CONFIG) to the production one
//   --tls     the frontends require mutual TLS (certificates made under .data/cluster/tls/); prints, as
//             its last lines, the TEMPORAL_TLS_* variables a client needs. A run without --tls returns a
//             --tls cluster to plain (either switch restarts only the server nodes and the UI server)
//   --sso     sign-on (scripts/cluster/sso.ts, docs/security-access.md): an OpenID provider on 127.0.0.1:8636
//             with an admin, a writer and a reader (passwords printed on first run only), the server's
//             JWT authorizer, the Web UI's login; prints the `export NAME=value` lines of the worker and
//             the CLI last. Combines with --tls; a run without it returns the cluster to no sign-on
//   --monitoring  also Prometheus with the shipped alert rules (scripts/cluster/monitoring.ts)
//   --status  one line per process: node, services, pid, up or down, ports (--json: the same as JSON)
//   --stop    stop the UI, the codec server, the webhook receiver, Prometheus, every server node and PostgreSQL, and
//             wait until they have exited
// The payload key file (.data/cluster/payload-keys), the codec server's token file
// (.data/cluster/codec-token), the workers' sinks file (.data/cluster/sinks.yaml, KEEPER_SINKS_FILE) and
// the GitHub webhook receiver's secret (.data/cluster/github-webhook-secret) are made on first run; the
// codec server decodes with the keys for callers that carry the token (`temporal --codec-auth`), and the
// webhook receiver (npm run webhooks) runs beside it.
import { type ClusterCommand, openNotice, parseClusterArgs, USAGE, UsageError } from './cluster/args';
import { type EnsureResult, ensureCluster, stopCluster } from './cluster/control';
import { CLUSTER_DATA_DIR, CLUSTER_NAMESPACE, CLUSTER_PORTS, nodeAddress } from './cluster/layout';
import { ensureMonitoring, stopMonitoring } from './cluster/monitoring';
import { ensureWebhookReceiver, stopWebhookReceiver } from './cluster/webhooks';
import { clusterReport, formatStatus } from './cluster/status';
import { TLS_FILES } from './cluster/tls';
import { ensureTools } from './tools';

const say = (line: string) => console.log(line);

async function up(command: Extract<ClusterCommand, { action: 'up' }>): Promise<void> {
  const started = Date.now();
  await ensureTools({ cluster: true });
  const result = await ensureCluster({
    tuned: command.tuned,
    tls: command.tls,
    sso: command.sso,
    nodes: command.nodes,
    ...(command.historyShards !== undefined ? { historyShards: command.historyShards } : {}),
    log: say,
  });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const what = [...result.started, ...result.startedNodes.map((n) => `node ${n}`)];
  const upgraded = result.upgrade.length
    ? ` Upgraded ${result.upgrade[0]!.from} -> ${result.upgrade.map((s) => s.to).join(' -> ')}.`
    : '';
  say(
    (what.length ? `Cluster up in ${seconds}s (started ${what.join(', ')}).` : 'Cluster already running.') + upgraded,
  );
  const open = openNotice(command);
  if (open) say(open);
  say(
    `  Temporal gRPC  ${result.address}    server ${result.release}    (TEMPORAL_ADDRESS=${result.address} npm run worker)`,
  );
  for (let node = 2; node <= command.nodes; node++) say(`  node ${node}         ${nodeAddress(node)}`);
  if (result.sso)
    say(`  Web UI         ${result.uiUrl}    (log in with ${result.sso.issuer}; payloads decoded for any role)`);
  else {
    say(
      `  Web UI         ${result.uiUrl}    (codec endpoint ${result.codecUrl}: payloads show encrypted in a browser,`,
    );
    say('                 which sends no codec token without sign-on: --sso; docs/security.md)');
  }
  say(
    `  PostgreSQL     127.0.0.1:${CLUSTER_PORTS.postgres}    metrics http://127.0.0.1:${CLUSTER_PORTS.metrics}/metrics`,
  );
  const webhooks = await ensureWebhookReceiver(say, { ...result.clientEnv, ...(result.sso?.cli ?? {}) });
  say(`  GitHub webhooks ${webhooks.url}    (secret in ${webhooks.secretFile})`);
  if (command.monitoring) await ensureMonitoring(say);
  say(`  data and logs  ${CLUSTER_DATA_DIR}`);
  say('  every process: npm run cluster -- --status    stop with: npm run cluster -- --stop');
  say("Workers, the CLI and clients encrypt payloads with the cluster's key file (docs/security.md):");
  say(`  export PAYLOAD_ENCRYPTION_KEYS_FILE=${result.payloadKeysFile}`);
  say("Workers apply keepers' bundles only through the sinks of this file (docs/contract.md, keep --sink <name>):");
  say(`  export KEEPER_SINKS_FILE=${result.sinksFile}`);
  say(`The codec server requires a bearer token (${result.codecTokenFile}); the temporal CLI decodes with:`);
  // Under sign-on the codec server serves HTTPS with a certificate of the cluster's CA.
  const trust = result.sso ? `SSL_CERT_FILE=${TLS_FILES.caCert} ` : '';
  say(
    `  ${trust}temporal workflow show -w WORKFLOW_ID --address ${result.address} --namespace ${CLUSTER_NAMESPACE} \\`,
  );
  say(
    `    --codec-endpoint ${result.codecUrl} --codec-auth "Bearer $(head -n 1 ${result.codecTokenFile})"${
      result.sso
        ? ` \\\n    ${result.tls ? '' : '--tls=false '}--api-key "$(npx docs-admin token)"   # as docs-admin-cli (the export lines below)`
        : ''
    }`,
  );
  if (result.sso) printSignOn(result.sso);
  if (result.tls) {
    // Last, one NAME=value a line, so `npm run cluster -- --tls | tail -n 4 > tls.env` is a client's env file.
    say(`  mutual TLS: a client needs these (TEMPORAL_ADDRESS=${result.address}):`);
    for (const [name, value] of Object.entries(result.clientEnv)) say(`${name}=${value}`);
  }
}

/** The people's passwords (first run only) and the services' settings, as `export` lines a shell can source. */
function printSignOn(sso: NonNullable<EnsureResult['sso']>): void {
  if (sso.passwords) {
    say('Sign-on: the people of the directory and their passwords (shown this once; only hashes are kept):');
    for (const [user, password] of Object.entries(sso.passwords)) say(`  ${user.padEnd(8)} ${password}`);
  }
  say('The worker signs in as docs-admin-worker (npm run worker in a shell with these):');
  for (const [name, value] of Object.entries(sso.worker)) say(`  export ${name}=${value}`);
  say('The CLI and the client library sign in as docs-admin-cli:');
  for (const [name, value] of Object.entries(sso.cli)) say(`export ${name}=${value}`);
}

async function main(argv: string[]): Promise<void> {
  let command: ClusterCommand;
  try {
    command = parseClusterArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`npm run cluster: ${err.message}\n${USAGE}`);
    process.exit(2);
  }
  if (command.action === 'status') {
    const report = await clusterReport();
    if (command.json) say(JSON.stringify(report, null, 2));
    else formatStatus(report).forEach((line) => say(line));
    return;
  }
  if (command.action === 'stop') {
    if (await stopMonitoring()) say('stopped Prometheus');
    if (await stopWebhookReceiver()) say('stopped the webhook receiver');
    const stopped = await stopCluster(say);
    if (stopped.length === 0) say('no cluster started from this checkout is running');
    return;
  }
  await up(command);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(`npm run cluster: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
