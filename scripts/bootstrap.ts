// `npm run bootstrap`: finds or builds the Temporal CLI, the time-skipping test server and the
// production server binaries of `npm run cluster` (.tools/).
import { ensureTools } from './tools';

ensureTools({ cluster: true }).then(
  ({ cli, testServer, cluster }) => {
    console.log(`temporal CLI: ${cli ?? '(SDK download at first use)'}`);
    console.log(`time-skipping test server: ${testServer ? 'ready' : '(SDK download at first use)'}`);
    console.log(
      `cluster binaries (temporal-server, temporal-sql-tool, temporal-ui-server): ${cluster ? 'ready' : 'missing (no Go)'}`,
    );
  },
  (err: unknown) => {
    console.error(`bootstrap failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
