// Fault injection: the Temporal server is stopped and started again while lifecycles are in flight
// (on the cluster only the temporal-server process, with the same configuration; PostgreSQL stays; on
// a dev server, SIGKILL and a restart on its SQLite file). The worker processes reconnect by
// themselves; every workflow completes with the right result, exactly one agent job exists per agent
// workflow (429s are printed: see scenarios.ts). On the cluster by default (see target.ts).
import { after, before, test } from 'node:test';
import { serverRestart } from './scenarios';
import { chaosServer, type ChaosServer } from './target';

const LIFECYCLES = Number(process.env.CHAOS_LIFECYCLES || 200);

let server: ChaosServer;

before(async () => {
  server = await chaosServer({ restartable: true });
});

after(async () => {
  await server?.close();
});

test(
  `Temporal server restarted with ${LIFECYCLES} lifecycles in flight: nothing lost, no duplicate`,
  { timeout: 600_000 },
  async () => {
    await serverRestart(server, {
      lifecycles: LIFECYCLES,
      projects: 5,
      rate: { limit: 10, windowMs: 5_000 },
      workers: 2,
      taskQueue: 'chaos-server-restart',
    });
  },
);
