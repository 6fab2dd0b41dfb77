// Fault injection at the API: 10 % 5xx, 5 % connection resets, 5 % slow beyond the client timeout and
// 2 % non-JSON bodies, all at once, on every route including bundle downloads (see scenarios.ts).
//   - Exports all complete (their ambiguous failures are retryable).
//   - Agent jobs: the idempotency policy fails a create whose outcome is unknown with OutcomeUnknown
//     rather than risk a second pull request. So each agent workflow either completes with exactly one
//     job, or fails with OutcomeUnknown and the emulator holds at most one job for its prompt. No
//     duplicates, and no failure of any other type (nothing fails on a retryable fault).
//   - A bundle keeper with a file sink, refreshing every few seconds through download faults, never
//     applies a link that does not download.
// On the cluster by default (see target.ts).
import { after, before, test } from 'node:test';
import { apiFaults } from './scenarios';
import { chaosServer, type ChaosServer } from './target';

const LIFECYCLES = Number(process.env.CHAOS_FAULT_LIFECYCLES || 120);

let server: ChaosServer;

before(async () => {
  server = await chaosServer();
});

after(async () => {
  await server?.close();
});

test(
  `fault mix on every route, ${LIFECYCLES} lifecycles and a keeper: nothing lost, no duplicate, no broken link applied`,
  { timeout: 600_000 },
  async () => {
    await apiFaults(server, {
      lifecycles: LIFECYCLES,
      projects: 10,
      rate: { limit: 100_000, windowMs: 3_600_000 },
      taskQueue: 'chaos-api-faults',
    });
  },
);
