// MUST RUN ALONE: this file SIGKILLs node 2 of the shared cluster and brings it back (see
// test/chaos/node-loss.ts). A two-node cluster (`npm run cluster -- --nodes 2`, node 2 started if down)
// loses node 2 with CHAOS_LIFECYCLES (default 200) lifecycles in flight, agent jobs under 10 creates per
// 5 s per project, and a keeper refreshing 12 s links: nothing lost, no duplicate, no 429, no expired
// link applied; the shard move time and the silence of the lifecycles in flight are printed.
import { nodeLossSuite } from './node-loss';

const LIFECYCLES = Number(process.env.CHAOS_LIFECYCLES || 200);

nodeLossSuite(
  `node 2 SIGKILLed with ${LIFECYCLES} lifecycles in flight and brought back: nothing lost, no duplicate, no 429`,
  {
    lifecycles: LIFECYCLES,
    projects: 5,
    rate: { limit: 10, windowMs: 5_000 },
    workers: 2,
    taskQueue: 'chaos-node-loss',
  },
  600_000,
);
