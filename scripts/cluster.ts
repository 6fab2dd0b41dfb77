// `npm run cluster`: a production-shaped Temporal on 127.0.0.1, built and run natively: PostgreSQL
// (persistence and SQL visibility), the Temporal server 1.29.1 with production-default dynamic
// config, the namespace and search attributes, and the Web UI. The first run builds the binaries
// (scripts/tools.ts) and creates the database; later runs find what is running and start only what
// is down. Everything is in the background; logs and data in .data/cluster/.
//   --tuned   add the dev server's dynamic config (DEV_SERVER_DYNAMIC_CONFIG) to the production one
//   --tls     the frontend requires mutual TLS (certificates made under .data/cluster/tls/); prints, as
//             its last lines, the TEMPORAL_TLS_* variables a client needs. A run without --tls returns a
//             --tls cluster to plain (either switch restarts only the server and the UI server)
//   --monitoring  also Prometheus with the shipped alert rules (scripts/cluster/monitoring.ts)
//   --stop    stop the UI, the codec server, Prometheus, the server and PostgreSQL, and wait until they have exited
// The payload key file (.data/cluster/payload-keys) is made on first run; the codec server decodes with
// it for the Web UI.
import { ensureCluster, stopCluster } from './cluster/control';
import { CLUSTER_DATA_DIR, CLUSTER_PORTS } from './cluster/layout';
import { ensureMonitoring, stopMonitoring } from './cluster/monitoring';
import { ensureTools } from './tools';

const USAGE = 'usage: npm run cluster [-- [--tuned] [--tls] [--monitoring] | --stop]';
const say = (line: string) => console.log(line);

async function main(argv: string[]): Promise<void> {
  const unknown = argv.filter((a) => !['--tuned', '--stop', '--tls', '--monitoring'].includes(a));
  const stop = argv.includes('--stop');
  if (unknown.length > 0 || (stop && (argv.includes('--tuned') || argv.includes('--tls')))) {
    console.error(USAGE);
    process.exit(2);
  }
  if (argv.includes('--stop')) {
    if (await stopMonitoring()) say('stopped Prometheus');
    const stopped = await stopCluster(say);
    if (stopped.length === 0) say('no cluster started from this checkout is running');
    return;
  }

  const started = Date.now();
  await ensureTools({ cluster: true });
  const result = await ensureCluster({ tuned: argv.includes('--tuned'), tls: argv.includes('--tls'), log: say });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  say(
    result.started.length
      ? `Cluster up in ${seconds}s (started ${result.started.join(', ')}).`
      : 'Cluster already running.',
  );
  say(`  Temporal gRPC  ${result.address}    (TEMPORAL_ADDRESS=${result.address} npm run worker)`);
  say(`  Web UI         ${result.uiUrl}    (decodes payloads through the codec server ${result.codecUrl})`);
  say(
    `  PostgreSQL     127.0.0.1:${CLUSTER_PORTS.postgres}    metrics http://127.0.0.1:${CLUSTER_PORTS.metrics}/metrics`,
  );
  if (argv.includes('--monitoring')) await ensureMonitoring(say);
  say(`  data and logs  ${CLUSTER_DATA_DIR}`);
  say('  stop with: npm run cluster -- --stop');
  say("Workers, the CLI and clients encrypt payloads with the cluster's key file (docs/security.md):");
  say(`  export PAYLOAD_ENCRYPTION_KEYS_FILE=${result.payloadKeysFile}`);
  if (result.tls) {
    // Last, one NAME=value a line, so `npm run cluster -- --tls | tail -n 4 > tls.env` is a client's env file.
    say(`  mutual TLS: a client needs these (TEMPORAL_ADDRESS=${result.address}):`);
    for (const [name, value] of Object.entries(result.clientEnv)) say(`${name}=${value}`);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(`npm run cluster: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
