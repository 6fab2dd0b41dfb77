// MUST RUN ALONE: this file SIGKILLs node 2 of the shared cluster and brings it back (see
// test/chaos/node-loss.ts). A two-node cluster (`npm run cluster -- --nodes 2`, node 2 started if down)
// loses node 2 with CHAOS_LIFECYCLES (default 200) lifecycles in flight, agent jobs under 10 creates per
// 5 s per project, and a keeper refreshing 12 s links: nothing lost, no duplicate, no 429, no expired
// link applied; the shard move time and the silence of the lifecycles in flight are printed.
import { after, before, describe, test } from 'node:test';
import { clusterSkipReason } from '../helpers/temporal';
import { nodeLoss, restoreNode2 } from './node-loss';
import { chaosServer, type ChaosServer } from './target';

const LIFECYCLES = Number(process.env.CHAOS_LIFECYCLES || 200);

describe('node loss on a two-node cluster', { skip: clusterSkipReason() }, () => {
  let server: ChaosServer;

  before(async () => {
    server = await chaosServer({ kind: 'cluster' });
  });

  after(async () => {
    await restoreNode2();
    await server?.close();
  });

  test(
    `node 2 SIGKILLed with ${LIFECYCLES} lifecycles in flight and brought back: nothing lost, no duplicate, no 429`,
    { timeout: 600_000 },
    async () => {
      await nodeLoss(server, {
        lifecycles: LIFECYCLES,
        projects: 5,
        rate: { limit: 10, windowMs: 5_000 },
        workers: 2,
        taskQueue: 'chaos-node-loss',
      });
    },
  );
});
