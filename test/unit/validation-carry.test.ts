// test-lane: parallel
// Carried state is taken only from a workflow's own past, in the shape the workflow writes: the origin
// check, each carry type's shape check, and every carry the replay corpus holds (written by this release
// and the one before) accepted as it is.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { agentOptionsProblems } from '../../src/policies/validation/agent';
import {
  type CarryCheck,
  type RunOrigin,
  carriedStateProblems,
  carryOriginProblem,
  keeperCarryProblems,
  startCarryProblems,
} from '../../src/policies/validation/carry';
import { agentJobCarry as agentCarryProblems } from '../../src/shared/agent-job';
import { rateLimiterCarry as limiterCarryProblems } from '../../src/shared/rate-limiter';
import { staticExportCarry as exportCarryProblems } from '../../src/shared/static-export';
import { decodeKeeperCarry } from '../../src/policies/validation/keeper-compat';
import { exportOptionsProblems } from '../../src/policies/validation/export';
import { keeperInputProblems } from '../../src/policies/validation/keeper';
import type { BundleKeeperCarry } from '../../src/shared/bundle-keeper';
import { HISTORIES_DIR, loadIndex } from '../replay/corpus';

const continued: RunOrigin = { continuedFromExecutionRunId: 'run-1', attempt: 1 };
const fresh: RunOrigin = { attempt: 1 };

const keeperCarry = (): BundleKeeperCarry => ({
  current: null,
  pending: {
    jobId: 'exp_1',
    version: null,
    bundle: {
      bundleUrl: 'https://bundles.example/exp_1.tar.gz?sig=s3cr3t',
      expiresAt: '2026-11-23T14:09:08Z',
      sizeBytes: 719,
    },
    failures: 0,
    retryAtMs: null,
  },
  version: null,
  exportsDone: 1,
  refreshesDone: 0,
  paused: false,
  export: { state: 'idle' },
  sink: { state: 'resolved', name: 'prod-config', type: 'file' },
  lastError: null,
  generation: 1,
});

/** The same carry as a02d727 and earlier wrote it: its export and sink as flags. */
const flagsCarry = () => {
  const { export: _export, sink: _sink, ...rest } = keeperCarry();
  return {
    ...rest,
    exportWanted: false,
    exportFailures: 0,
    exportRetryAtMs: null,
    sinkResolved: { name: 'prod-config', type: 'file' },
    sinkRefused: null,
  };
};

describe('carryOriginProblem: only a run that continued from its own chain, as its first attempt', () => {
  test('a continued first attempt may take its carry', () => {
    assert.equal(carryOriginProblem(continued), null);
  });

  test('a start, a retry and a cron run may not (each repeats what a starter gave)', () => {
    assert.match(carryOriginProblem(fresh)!, /did not continue from an earlier one/);
    assert.match(carryOriginProblem({ ...continued, continuedFromExecutionRunId: '' })!, /did not continue/);
    assert.match(carryOriginProblem({ ...continued, attempt: 2 })!, /retry attempt 2/);
    assert.match(carryOriginProblem({ ...continued, cronSchedule: '* * * * *' })!, /cron run/);
  });
});

describe('carriedStateProblems', () => {
  test('no carry: nothing to say, whatever the origin', () => {
    assert.deepEqual(carriedStateProblems(fresh, { carry: undefined, carried: undefined }, keeperCarryProblems), []);
  });

  test('a start holding one is refused by name, even a null one, without looking at (or echoing) it', () => {
    const [problem, ...rest] = carriedStateProblems(
      fresh,
      { carry: keeperCarry(), carried: null },
      keeperCarryProblems,
    );
    assert.deepEqual(rest, []);
    assert.match(problem!, /^carry and carried is set only by the workflow itself when it continues as new/);
    assert.doesNotMatch(problem!, /s3cr3t|prod-config/);
  });

  test('a continued run takes a well-formed carry, and names each field of a bad one', () => {
    assert.deepEqual(carriedStateProblems(continued, { carry: keeperCarry() }, keeperCarryProblems), []);
    const bad = carriedStateProblems(continued, { carried: { ...keeperCarry(), paused: 'no' } }, keeperCarryProblems);
    assert.deepEqual(bad, ['carried.paused must be true or false']);
  });
});

describe('shapes', () => {
  const expectProblems = (check: CarryCheck, value: unknown, expected: RegExp[]) => {
    const problems = check(value, 'carry');
    assert.equal(problems.length, expected.length, problems.join(' | '));
    expected.forEach((re, i) => assert.match(problems[i]!, re));
    for (const p of problems) assert.doesNotMatch(p, /s3cr3t|evil|attacker/, 'never echoes a value');
  };

  test('keeper: the bundle it fetches is an http(s) link, its sink a name and a known type', () => {
    const carry = keeperCarry();
    carry.pending!.bundle!.bundleUrl = 'file:///etc/evil?sig=s3cr3t';
    carry.sink = { state: 'resolved', name: 'attacker sink', type: 'shell' as 'file' };
    expectProblems(keeperCarryProblems, carry, [
      /^carry\.pending\.bundle\.bundleUrl must be an http\(s\) URL$/,
      /^carry\.sink\.name must be a sink name$/,
      /^carry\.sink\.type must be one of file, webhook, command, mirror$/,
    ]);
    expectProblems(keeperCarryProblems, { ...keeperCarry(), export: { state: 'running' } }, [
      /^carry\.export\.state must be one of idle, wanted$/,
    ]);
    expectProblems(keeperCarryProblems, { ...flagsCarry(), sinkResolved: { name: 'attacker sink', type: 'file' } }, [
      /^carry\.sink\.name must be a sink name$/,
    ]);
    expectProblems(keeperCarryProblems, { ...keeperCarry(), exportsDone: '1', generation: -1, current: [] }, [
      /carry\.current must be an object/,
      /carry\.exportsDone must be a whole number >= 0/,
      /carry\.generation must be a whole number >= 0/,
    ]);
    expectProblems(keeperCarryProblems, 'attacker', [/^carry must be an object$/]);
  });

  test('keeper: a publishing state is checked where the keeper reads it', () => {
    const publishing = {
      wantedSinceMs: null,
      wantedShas: ['abc1234'],
      round: null,
      lastUpdate: null,
      pendingSinceMs: null,
      builtShas: [],
      deliveries: 'evil',
      pullRequests: [],
      updatesDone: 0,
      updatesFailed: 0,
    };
    expectProblems(keeperCarryProblems, { ...keeperCarry(), publishing }, [
      /carry\.publishing\.deliveries must be a list/,
    ]);
  });

  test("keeper: a carry of a02d727 and earlier (flags, `carried`) is decoded into today's shape once", () => {
    const commit = { sha: 'a'.repeat(40), ref: 'main', message: null, pullRequest: null, agentWorkflowId: null };
    const publishing = {
      wantedSinceMs: null,
      wantedShas: [],
      round: null,
      ready: { ...commit, requestedAtMs: 5 },
      lastUpdate: null,
      deliveries: [],
      pullRequests: [],
      updatesDone: 1,
      updatesFailed: 0,
    };
    const old = { ...flagsCarry(), exportWanted: true, exportFailures: 2, exportRetryAtMs: 9, publishing };
    assert.deepEqual(keeperCarryProblems(old, 'carried'), []);
    const today = decodeKeeperCarry({ domain: 'docs.example.com', sink: 'prod-config', carried: old })!;
    assert.deepEqual(keeperCarryProblems(today, 'carry'), []);
    assert.deepEqual(today.export, { state: 'wanted', commit: publishing.ready, retryAtMs: 9, failures: 2 });
    assert.deepEqual(today.sink, { state: 'resolved', name: 'prod-config', type: 'file' });
    const { ready: _exported, ...rest } = publishing;
    assert.deepEqual(today.publishing, { ...rest, builtShas: [], pendingSinceMs: null });
    assert.equal('exportWanted' in today, false);
    const refused = { ...flagsCarry(), sinkResolved: undefined, sinkRefused: { reason: 'r', checks: 3, retryAtMs: 1 } };
    assert.deepEqual(decodeKeeperCarry({ carry: refused })!.sink, {
      state: 'refused',
      reason: 'r',
      checks: 3,
      retryAtMs: 1,
    });
    const fresh = { ...flagsCarry(), sinkResolved: undefined, sinkRefused: undefined };
    assert.deepEqual(decodeKeeperCarry({ carry: fresh })!.export, { state: 'idle' });
    assert.deepEqual(decodeKeeperCarry({ carry: fresh })!.sink, { state: 'resolving' });
    assert.equal(decodeKeeperCarry({ domain: 'docs.example.com' }), null);
  });

  test('staticExport, agentJob and the limiter: ids, numbers and lists', () => {
    expectProblems(
      exportCarryProblems,
      { jobId: '', observations: [{ atMs: 'x', status: 1 }], polls: 1.5, startedAtMs: 0 },
      [
        /carry\.jobId must be a non-empty string/,
        /carry\.observations\[0\]\.atMs must be a finite number/,
        /carry\.observations\[0\]\.status must be a string/,
        /carry\.polls must be a whole number/,
      ],
    );
    expectProblems(
      agentCarryProblems,
      {
        job: { id: 'aj_1', status: 'active', source: null },
        observations: [],
        polls: 0,
        messagesSent: 0,
        startedAtMs: 1,
      },
      [
        /job\.source must be an object/,
        /job\.model must be a string/,
        /job\.prLink/,
        /job\.createdAt/,
        /job\.archivedAt/,
      ],
    );
    expectProblems(
      limiterCarryProblems,
      { grants: [{ requesterWorkflowId: 'evil', requestKey: 'k', atMs: 1, freeAtMs: Infinity }], queue: {} },
      [/carry\.grants\[0\]\.freeAtMs must be a finite number/, /carry\.queue must be a list/],
    );
  });
});

describe('every carry the replay corpus holds is accepted as written', () => {
  const checks: Record<string, CarryCheck> = {
    bundleKeeper: keeperCarryProblems,
    staticExport: exportCarryProblems,
    agentJob: agentCarryProblems,
    agentRateLimiter: limiterCarryProblems,
  };
  test('the continued runs of each workflow type, of this release and the one before', () => {
    const seen = new Set<string>();
    for (const entry of loadIndex()) {
      if (!entry.path.endsWith('.continued')) continue;
      const history = historyFromJSON(JSON.parse(readFileSync(path.join(HISTORIES_DIR, entry.file), 'utf8')));
      const started = history.events![0]!.workflowExecutionStartedEventAttributes!;
      assert.ok(started.continuedExecutionRunId, entry.file);
      assert.equal(started.attempt, 1, entry.file);
      const args = (started.input?.payloads ?? []).map((p) => defaultPayloadConverter.fromPayload(p)) as Record<
        string,
        unknown
      >[];
      // The keeper and the limiter carry in their input, the polling workflows in their second argument.
      const holder = args.find((a) => a && ('carry' in a || 'carried' in a));
      assert.ok(holder, `${entry.file} holds a carry`);
      const origin = { continuedFromExecutionRunId: started.continuedExecutionRunId, attempt: started.attempt! };
      const problems = carriedStateProblems(
        origin,
        { carry: holder.carry, carried: holder.carried },
        checks[entry.type]!,
      );
      assert.deepEqual(problems, [], entry.file);
      seen.add(entry.type);
    }
    assert.deepEqual([...seen].sort(), Object.keys(checks).sort(), 'a continued run of every type');
  });
});

describe('starters', () => {
  test('the client library refuses a keeper input holding a carry', () => {
    const problems = keeperInputProblems({ domain: 'docs.example.com', sink: 'prod', carry: keeperCarry() });
    assert.deepEqual(problems, [
      'carry is set only by the workflow itself when it continues as new: leave it out of a start',
    ]);
    assert.deepEqual(startCarryProblems({ carried: {} }, ['carry', 'carried']).length, 1);
  });

  test("staticExport's and agentJob's second argument: an object, a carry only when continued, polls >= 1", () => {
    const carry = { jobId: 'exp_other_domain', observations: [], polls: 0, startedAtMs: 0 };
    assert.deepEqual(exportOptionsProblems({}, fresh), []);
    assert.deepEqual(exportOptionsProblems({ carry }, continued), []);
    assert.match(exportOptionsProblems({ carry }, fresh)[0]!, /^carry is set only by the workflow itself/);
    assert.match(exportOptionsProblems(null, fresh)[0]!, /second argument.*must be an object/);
    assert.match(exportOptionsProblems({ maxPollsPerRun: 0 }, fresh)[0]!, /maxPollsPerRun must be an integer >= 1/);
    assert.match(agentOptionsProblems({ carry: {} }, { ...continued, attempt: 3 })[0]!, /retry attempt 3/);
    assert.match(agentOptionsProblems('x', fresh)[0]!, /second argument.*must be an object/);
    assert.deepEqual(agentOptionsProblems({ poll: { floorMs: 100 }, maxPollsPerRun: 2 }, fresh), []);
  });
});
