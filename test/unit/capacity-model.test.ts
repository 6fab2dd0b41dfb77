// test-lane: parallel
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  agentPolls,
  countActions,
  countTasks,
  fitLine,
  fleetNeeds,
  naivePolls,
  type EventLite,
  type UnitCost,
} from '../../bench/lib/capacity-model';
import { agentPollDelay } from '../../src/policies/polling';
import type { ScalingRun } from '../../bench/lib/capacity-derive';
import { oneMoreLine } from '../../bench/lib/capacity-report';

const ev = (type: string, extra: Partial<EventLite> = {}): EventLite => ({ type, ...extra });

describe('countActions (Temporal Cloud rules)', () => {
  test('start, timers, signals, accepted updates and child starts count one each', () => {
    const events = [
      ev('WORKFLOW_EXECUTION_STARTED'),
      ev('WORKFLOW_TASK_SCHEDULED'),
      ev('WORKFLOW_TASK_COMPLETED'),
      ev('TIMER_STARTED'),
      ev('TIMER_FIRED'),
      ev('WORKFLOW_EXECUTION_SIGNALED'),
      ev('WORKFLOW_EXECUTION_UPDATE_ACCEPTED'),
      ev('START_CHILD_WORKFLOW_EXECUTION_INITIATED'),
      ev('WORKFLOW_EXECUTION_COMPLETED'),
    ];
    assert.equal(countActions(events), 5);
  });

  test('an activity counts each attempt; its scheduled and completed events do not count', () => {
    const events = [
      ev('ACTIVITY_TASK_SCHEDULED'),
      ev('ACTIVITY_TASK_STARTED', { attempt: 3 }),
      ev('ACTIVITY_TASK_COMPLETED'),
      ev('ACTIVITY_TASK_SCHEDULED'),
      ev('ACTIVITY_TASK_STARTED', { attempt: 1 }),
    ];
    assert.equal(countActions(events), 4);
  });

  test('local activities of one workflow task are one action; patch markers none', () => {
    const events = [
      ev('MARKER_RECORDED', { marker: 'core_local_activity', taskCompletedId: 4 }),
      ev('MARKER_RECORDED', { marker: 'core_local_activity', taskCompletedId: 4 }),
      ev('MARKER_RECORDED', { marker: 'core_local_activity', taskCompletedId: 9 }),
      ev('MARKER_RECORDED', { marker: 'core_patch', taskCompletedId: 9 }),
    ];
    assert.equal(countActions(events), 2);
  });

  test("search attribute upserts count, except versioning's TemporalChangeVersion alone", () => {
    const events = [
      ev('UPSERT_WORKFLOW_SEARCH_ATTRIBUTES', { keys: ['DocsJobStatus', 'DocsJobId'] }),
      ev('UPSERT_WORKFLOW_SEARCH_ATTRIBUTES', { keys: ['TemporalChangeVersion'] }),
    ];
    assert.equal(countActions(events), 1);
  });

  test('tasks are completed workflow tasks and started activities', () => {
    assert.equal(countTasks([ev('WORKFLOW_TASK_COMPLETED'), ev('ACTIVITY_TASK_STARTED'), ev('TIMER_STARTED')]), 2);
  });
});

describe('poll counts and fits', () => {
  test('the naive shape polls every 10 s', () => {
    assert.equal(naivePolls(120_000, 10_000), 12);
    assert.equal(naivePolls(30 * 60_000, 10_000), 180);
  });

  test('the agent policy polls far less than every 10 s on a 30-minute job', () => {
    const polls = agentPolls(30 * 60_000, agentPollDelay);
    // Half the elapsed time, capped at 28 s: about 1,800 / 28 plus the ramp-up.
    assert.ok(polls > 60 && polls < 90, String(polls));
    assert.ok(agentPolls(120_000, agentPollDelay) < polls);
  });

  test('fitLine recovers a straight line', () => {
    const { a, b } = fitLine([1, 2, 3, 4].map((x) => ({ x, y: 7 + 6 * x })));
    assert.ok(Math.abs(a - 7) < 1e-9 && Math.abs(b - 6) < 1e-9);
  });
});

describe('fleetNeeds', () => {
  const job: UnitCost = { events: 60, actions: 20, tupleWrites: 300, walBytes: 100_000, workerCpuMs: 30 };
  const keeperDay: UnitCost = { events: 720, actions: 240, tupleWrites: 3_600, walBytes: 1_200_000, workerCpuMs: 360 };
  const needs = fleetNeeds({
    projects: 1_000,
    jobsPerProjectHour: 100,
    job,
    keeperDay,
    workerCpuMsPerSecond: 500,
    nodeTransitionsPerSecond: 1_000,
    shardTransitionsPerSecond: 250,
    limiterGrantsPerSecond: 10,
  });

  test('adds the jobs at the full rate and a keeper per project spread over its day', () => {
    const jobs = 100_000 / 3600;
    assert.ok(Math.abs(needs.jobsPerSecond - jobs) < 1e-9);
    assert.ok(Math.abs(needs.eventsPerSecond - (jobs * 60 + (1_000 * 720) / 86_400)) < 1e-9);
    assert.ok(Math.abs(needs.actionsPerMonth - needs.actionsPerSecond * 86_400 * 30) < 1e-3);
  });

  test('rounds processes and nodes up and shards to a power of two', () => {
    // 27.8 jobs/s x 30 ms + 1,000 keepers x 360 ms / day = 837.5 ms/s: two processes of 500 ms/s.
    assert.equal(needs.workerProcesses, 2);
    assert.equal(needs.serverNodes, 2); // 1,675 events/s over 1,000 per node
    assert.equal(needs.historyShards, 8); // 1,675 / 250 = 6.7, next power of two
    assert.ok(Math.abs(needs.limiterLoad - 100 / 3600 / 10) < 1e-12);
  });
});

describe('oneMoreLine (what one more worker process and server node bought)', () => {
  const run = (workers: number, serverNodes: number, wallMs: number): ScalingRun => ({
    workers,
    serverNodes,
    projects: 15,
    jobs: 150,
    wallMs,
    workerCpuS: 10,
    events: 3000,
    createSpanMs: 1000,
    tupleWrites: 10_000,
    walBytes: 1,
    otherActions: 0,
  });

  test('compares each against the one-worker, one-node burst', () => {
    const line = oneMoreLine({ scaling: [run(1, 1, 15_000), run(2, 1, 30_000)], secondNode: run(1, 2, 12_000) });
    assert.match(line, /a worker process 10\.0 → 5\.0 jobs\/s \(0\.50x\)/);
    assert.match(line, /a server node 10\.0 → 12\.5 jobs\/s \(1\.25x\)/);
  });

  test('says when the second node was not measured', () => {
    assert.match(oneMoreLine({ scaling: [run(1, 1, 15_000)] }), /a server node not measured/);
  });
});
