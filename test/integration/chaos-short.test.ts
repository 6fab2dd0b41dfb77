// test-lane: cluster-alone (restarts the shared cluster's server)
// The chaos suite's server restart reduced to fit in `npm test` (the full one is `npm run chaos`), on the
// production-shaped cluster with its default settings (a dev server when DOCS_ADMIN_SKIP_CLUSTER=1), the
// scenario of test/chaos (scenarios.ts) at a small size: the Temporal server restarted with 40 lifecycles
// in flight, nothing lost, no duplicate. The scenarios that leave the cluster as it is (a worker process
// SIGKILLed, the API fault mix) are in chaos-short-faults.test.ts, beside the other cluster files.
import { after, before, test } from 'node:test';
import { partitionConfig } from '../../bench/throughput';
import { serverRestart } from '../chaos/scenarios';
import { chaosServer, type ChaosServer } from '../chaos/target';

const RATE = { limit: 5, windowMs: 5_000 };

let server: ChaosServer;

before(async () => {
  server = await chaosServer({ restartable: true, devDynamicConfig: partitionConfig(1) });
});

after(async () => {
  await server?.close();
});

test(
  'the Temporal server restarted in flight: nothing lost, no duplicate agent job',
  { timeout: 180_000 },
  async () => {
    await serverRestart(server, {
      lifecycles: 40,
      projects: 2,
      rate: RATE,
      workers: 1,
      taskQueue: 'chaos-short-server-restart',
    });
  },
);
