// `npm run bootstrap`: finds or builds the Temporal CLI and the time-skipping test server (.tools/).
import { ensureTools } from './tools';

ensureTools().then(
  ({ cli, testServer }) => {
    console.log(`temporal CLI: ${cli ?? '(SDK download at first use)'}`);
    console.log(`time-skipping test server: ${testServer ? 'ready' : '(SDK download at first use)'}`);
  },
  (err: unknown) => {
    console.error(`bootstrap failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
