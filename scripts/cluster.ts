// `npm run cluster`: a production-shaped Temporal on 127.0.0.1, built and run natively: PostgreSQL
// (persistence and SQL visibility), the Temporal server 1.29.1 with production-default dynamic
// config, the namespace and search attributes, and the Web UI. The first run builds the binaries
// (scripts/tools.ts) and creates the database; later runs find what is running and start only what
// is down. Everything is in the background; logs and data in .data/cluster/.
//   --tuned   add the dev server's dynamic config (DEV_SERVER_DYNAMIC_CONFIG) to the production one
//   --stop    stop the UI, the server and PostgreSQL, and wait until they have exited
//   --monitoring  also Prometheus with the shipped alert rules (scripts/cluster/monitoring.ts)
import { ensureCluster, stopCluster } from './cluster/control';
import { CLUSTER_DATA_DIR, CLUSTER_PORTS } from './cluster/layout';
import { ensureMonitoring, stopMonitoring } from './cluster/monitoring';
import { ensureTools } from './tools';

const USAGE = 'usage: npm run cluster [-- --tuned | --monitoring | --stop]';
const say = (line: string) => console.log(line);

async function main(argv: string[]): Promise<void> {
  const unknown = argv.filter((a) => a !== '--tuned' && a !== '--stop' && a !== '--monitoring');
  if (unknown.length > 0 || (argv.includes('--tuned') && argv.includes('--stop'))) {
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
  const result = await ensureCluster({ tuned: argv.includes('--tuned'), log: say });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  say(
    result.started.length
      ? `Cluster up in ${seconds}s (started ${result.started.join(', ')}).`
      : 'Cluster already running.',
  );
  say(`  Temporal gRPC  ${result.address}    (TEMPORAL_ADDRESS=${result.address} npm run worker)`);
  say(`  Web UI         ${result.uiUrl}`);
  say(
    `  PostgreSQL     127.0.0.1:${CLUSTER_PORTS.postgres}    metrics http://127.0.0.1:${CLUSTER_PORTS.metrics}/metrics`,
  );
  if (argv.includes('--monitoring')) await ensureMonitoring(say);
  say(`  data and logs  ${CLUSTER_DATA_DIR}`);
  say('  stop with: npm run cluster -- --stop');
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(`npm run cluster: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
