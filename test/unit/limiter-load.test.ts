// test-lane: parallel
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { temporal } from '@temporalio/proto';
import { msNumberToTs } from '@temporalio/common/lib/time';
import { countLimiterLoad } from '../../bench/lib/limiter-load';

const { EventType, TimeoutType } = temporal.api.enums.v1;
type Event = temporal.api.history.v1.IHistoryEvent;

const at = (ms: number, eventType: temporal.api.enums.v1.EventType, extra: Partial<Event> = {}): Event => ({
  eventTime: msNumberToTs(ms),
  eventType,
  ...extra,
});
const task = (ms: number): Event[] => [
  at(ms, EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
  at(ms + 1, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED),
  at(ms + 2, EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
];

test("a burst's limiter load counts only what happened from its start, over every run it touched", () => {
  const since = 100_000;
  const before = [at(10_000, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED), ...task(10_010)];
  const spanning = [
    at(90_000, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED),
    ...task(90_010),
    ...task(100_500),
    at(101_000, EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
    at(104_000, EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, {
      workflowTaskTimedOutEventAttributes: { timeoutType: TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START },
    }),
    ...task(104_001),
    at(105_000, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED),
    at(105_100, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW),
  ];
  const next = [at(105_100, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED), ...task(105_110)];
  assert.deepEqual(countLimiterLoad([before, spanning, next], since), {
    workflowTasks: 3,
    events: 10 + 4,
    runs: 2,
    stickyTimeouts: 1,
    failedTasks: 1,
    lostGrants: 0,
  });
});

test('grants sent in the task that ended a run are counted as lost; those of a running run are not', () => {
  const grant = (ms: number) => at(ms, EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED);
  const ended = [
    at(1_000, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED),
    ...task(1_010),
    grant(1_013), // an earlier task's grant: delivered
    ...task(2_000),
    grant(2_003),
    grant(2_003),
    at(2_004, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW),
  ];
  const running = [at(2_004, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED), ...task(2_010), grant(2_013)];
  assert.equal(countLimiterLoad([ended, running], 0).lostGrants, 2);
});

test('a start-to-close timeout is not counted as a sticky stall', () => {
  const events = [
    at(1_000, EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, {
      workflowTaskTimedOutEventAttributes: { timeoutType: TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE },
    }),
  ];
  assert.equal(countLimiterLoad([events], 0).stickyTimeouts, 0);
});

test('a load counted until a time leaves out what came after it, such as the run a quiet limiter compacts into', () => {
  const burst = [
    at(100_000, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED),
    ...task(100_010),
    ...task(150_000),
    at(160_000, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW),
  ];
  const compacted = [at(160_000, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED), ...task(160_010)];
  const until = countLimiterLoad([burst, compacted], 100_000, 155_000);
  assert.deepEqual(until, { workflowTasks: 2, events: 7, runs: 1, stickyTimeouts: 0, failedTasks: 0, lostGrants: 0 });
  assert.equal(countLimiterLoad([burst, compacted], 100_000).runs, 2);
});
