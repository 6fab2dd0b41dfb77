// test-lane: parallel
// The replay corpus: histories recorded from real runs (npm run replay:capture) of every workflow type
// on the paths that matter replay with the current src/workflows, so a change that would break
// executions already running fails here, before a deploy. And the guard itself: an incompatible change
// fails with a message naming the history and the remedy.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';
import { quietRuntime, workflowBundle } from '../helpers/temporal';
import { HISTORIES_DIR, loadIndex, replayCorpus } from '../replay/corpus';

/** The paths issue 13 asks the corpus to cover, per workflow type. */
const REQUIRED: Record<string, string[]> = {
  bundleKeeper: [
    'first-apply',
    'refresh-before-expiry',
    'publish-during-export',
    'pin',
    'pause-resume',
    'failed-verification',
    'continue-as-new',
  ],
  agentJob: [
    'success',
    'permit-queued-then-granted',
    'follow-up-message',
    'send-checkpoint-after-worker-died',
    'outcome-unknown',
    'failed-job',
    'continue-as-new',
  ],
  agentRateLimiter: ['queued-grants', 'hand-over-to-another-queue', 'continue-as-new'],
  staticExport: ['success', 'failure', 'continue-as-new'],
};
const INCOMPATIBLE_FIXTURE = path.resolve(__dirname, '../replay/fixtures/incompatible');
const { EventType } = temporal.api.enums.v1;

quietRuntime();
const index = loadIndex();
const eventsOf = (file: string) =>
  historyFromJSON(JSON.parse(readFileSync(path.join(HISTORIES_DIR, file), 'utf8'))).events ?? [];

describe('replay corpus', () => {
  test('covers every required path, and every history file is in the index', () => {
    for (const [type, paths] of Object.entries(REQUIRED)) {
      for (const p of paths)
        assert.ok(
          index.some((e) => e.type === type && e.path === p),
          `no history of ${type} on path "${p}"`,
        );
    }
    const onDisk = readdirSync(HISTORIES_DIR, { recursive: true, encoding: 'utf8' }).filter(
      (f) => f.endsWith('.json') && f !== 'index.json',
    );
    assert.deepEqual(onDisk.map((f) => f.split(path.sep).join('/')).sort(), index.map((e) => e.file).sort());
    for (const entry of index) {
      const events = eventsOf(entry.file);
      const started = events[0]?.workflowExecutionStartedEventAttributes;
      assert.equal(started?.workflowType?.name, entry.type, `${entry.file} is a history of ${entry.type}`);
      // A continue-as-new path holds the run that continued, and the run it continued into.
      if (entry.path === 'continue-as-new' || entry.path === 'hand-over-to-another-queue') {
        assert.equal(
          events.at(-1)?.eventType,
          EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
          `${entry.file} ends by continuing as new`,
        );
      }
      if (entry.path.endsWith('.continued'))
        assert.ok(started?.continuedExecutionRunId, `${entry.file} is a continued run`);
    }
  });

  test('every history replays with the current workflow code', async () => {
    const outcomes = await replayCorpus(await workflowBundle());
    assert.equal(outcomes.length, index.length);
    const failures = outcomes.filter((o) => o.error);
    assert.equal(failures.length, 0, `\n${failures.map((f) => f.error).join('\n\n')}`);
    // The replayer's update-with-start limitation (test/replay/corpus.ts) covers the limiter runs that
    // started that way and nothing else; once the SDK fixes it, they replay and this says so.
    const limited = outcomes.filter((o) => o.replayerLimitation).map((o) => o.entry.file);
    assert.ok(
      limited.every((f) => f.startsWith('agentRateLimiter/')),
      `only limiter runs: ${limited.join(', ')}`,
    );
    assert.ok(
      limited.length < index.filter((e) => e.type === 'agentRateLimiter').length,
      'the other limiter histories replay',
    );
    console.log(
      `replayed ${outcomes.length} histories of ${new Set(index.map((e) => e.type)).size} workflow types; ` +
        `${limited.length} update-with-start runs hit the SDK replayer's known failure (${limited.join(', ')})`,
    );
  });

  test('an incompatible change fails replay, naming the history and the remedy', async () => {
    // The fixture module is src/workflows with one change: staticExport sleeps before starting the export.
    const outcomes = await replayCorpus(await workflowBundle(INCOMPATIBLE_FIXTURE));
    const failed = outcomes.filter((o) => o.error);
    const exports = index.filter((e) => e.type === 'staticExport');
    assert.deepEqual(
      failed.map((o) => o.entry.file).sort(),
      exports.map((e) => e.file).sort(),
      'exactly the staticExport histories fail',
    );
    for (const { entry, error } of failed) {
      assert.ok(error!.includes(`test/replay/histories/${entry.file}`), error);
      assert.match(error!, /[Nn]ondeterminism|DeterminismViolation/);
      assert.match(error!, /patched\('<change-id>'\)/);
      assert.match(error!, /new Worker Deployment Version/);
    }
  });
});
