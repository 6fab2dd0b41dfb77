// test-lane: cluster
// The chaos suite's scenarios that leave the server as it is, reduced to fit in `npm test` (the full ones
// are `npm run chaos`), on the production-shaped cluster with its default settings (a dev server when
// DOCS_ADMIN_SKIP_CLUSTER=1), the same code as test/chaos (scenarios.ts) at a small size, each on a task
// queue of its own:
//   - three worker processes, one SIGKILLed with 40 lifecycles in flight (every job created, exports
//     and polls running): all complete, one job per agent workflow, no 429;
//   - the API fault mix with 30 lifecycles and a keeper: nothing lost, no duplicate, no broken link.
// The server restart, which the other cluster files must not see, is chaos-short.test.ts.
import { after, before, test } from 'node:test';
import { partitionConfig } from '../../bench/throughput';
import { apiFaults, workerKill } from '../chaos/scenarios';
import { chaosServer, type ChaosServer } from '../chaos/target';

const RATE = { limit: 5, windowMs: 5_000 };

let server: ChaosServer;

before(async () => {
  server = await chaosServer({ devDynamicConfig: partitionConfig(1) });
});

after(async () => {
  await server?.close();
});

test(
  'SIGKILL of one of three worker processes in flight: nothing lost, no duplicate agent job, no 429',
  { timeout: 180_000 },
  async () => {
    await workerKill(server, {
      lifecycles: 40,
      projects: 2,
      rate: RATE,
      workers: 3,
      taskQueue: 'chaos-short-worker-kill',
      killAt: 'jobs-exist',
    });
  },
);

test(
  'the API fault mix with a keeper: nothing lost, no duplicate, no broken link applied',
  { timeout: 180_000 },
  async () => {
    await apiFaults(server, {
      lifecycles: 30,
      projects: 3,
      rate: { limit: 100_000, windowMs: 3_600_000 },
      taskQueue: 'chaos-short-api-faults',
    });
  },
);
