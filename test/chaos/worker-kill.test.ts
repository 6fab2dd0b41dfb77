// Fault injection: three worker processes (`npm run worker`) on one task queue, one killed with SIGKILL
// mid-burst (agent creates and exports in flight) under a per-project API rate limit. Every workflow
// completes with the right result (an agent create on the wire at the kill may end OutcomeUnknown, by
// policy), the emulator holds at most one agent job per agent workflow, and no create is refused with
// 429 (the workers never sent more than the limit in a window). On the cluster by default (see target.ts).
import { after, before, test } from 'node:test';
import { workerKill } from './scenarios';
import { chaosServer, type ChaosServer } from './target';

const LIFECYCLES = Number(process.env.CHAOS_LIFECYCLES || 200);

let server: ChaosServer;

before(async () => {
  server = await chaosServer();
});

after(async () => {
  await server?.close();
});

test(
  `SIGKILL of one of three workers with ${LIFECYCLES} lifecycles in flight: nothing lost, no duplicate, the limit held`,
  { timeout: 600_000 },
  async () => {
    await workerKill(server, {
      lifecycles: LIFECYCLES,
      projects: 5,
      rate: { limit: 10, windowMs: 5_000 },
      workers: 3,
      taskQueue: 'chaos-worker-kill',
      killAt: 'mid-burst',
    });
  },
);
