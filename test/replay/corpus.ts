// The replay corpus (test/replay/histories, recorded by `npm run replay:capture`) and how to replay it:
// every history through Worker.runReplayHistories with a workflow bundle, each failure explained in
// one message that names the history and the remedy.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { CorpusEntry } from '../../scripts/replay-capture';
import { workflowTracingSinks } from '../../src/worker/tracing';

export const HISTORIES_DIR = path.resolve(__dirname, 'histories');

export function loadIndex(): CorpusEntry[] {
  return JSON.parse(readFileSync(path.join(HISTORIES_DIR, 'index.json'), 'utf8')) as CorpusEntry[];
}

/**
 * A run started by update-with-start (the rate limiter, from its requesters' activities): its first
 * workflow task accepted an update. SDK 1.24's replayer (Worker.runReplayHistories) fails on these with
 * "Update machine does not handle this event" although live workers replay them (a worker without a
 * cache completes every task by replaying the whole history, and the rollout test moves a running
 * limiter to a new version): they are replayed and that exact failure is expected of them.
 */
export function startedByUpdateWithStart(history: unknown): boolean {
  const events = (history as { events?: { eventType?: string }[] }).events ?? [];
  const accepted = events.findIndex((e) => e.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED');
  const secondTask = events.findIndex((e, i) => i > 1 && e.eventType === 'EVENT_TYPE_WORKFLOW_TASK_SCHEDULED');
  return accepted >= 0 && (secondTask < 0 || accepted < secondTask);
}

/** The replayer's known failure on update-with-start runs (see startedByUpdateWithStart). */
export const REPLAYER_UPDATE_WITH_START_FAILURE =
  /Nondeterminism error: Update machine does not handle this event: HistoryEvent\(id: \d+, TimerStarted\)/;

export interface ReplayOutcome {
  entry: CorpusEntry;
  /** Why the replay failed (undefined: it replayed, or failed only as the replayer does on update-with-start runs). */
  error?: string;
  /** An update-with-start run that failed exactly as the SDK's replayer fails on those (see startedByUpdateWithStart). */
  replayerLimitation?: boolean;
}

/** Why a history no longer replays, and what to do about it. */
export function incompatibilityMessage(entry: CorpusEntry, error: string): string {
  return [
    `test/replay/histories/${entry.file} (${entry.type}, path "${entry.path}": ${entry.covers}) does not replay with the current workflow code:`,
    `  ${error.split('\n')[0]}`,
    `Executions already running on this path would fail the same way after a deploy. Either keep the old`,
    `behaviour for them behind patched('<change-id>') (then deprecatePatch() once none are left), or ship the`,
    `change as a new Worker Deployment Version (new TEMPORAL_WORKER_BUILD_ID; pinned executions finish on the`,
    `old one). See docs/operations.md "Changing a workflow safely". Recapture (npm run replay:capture) only when no`,
    `execution of the old shape can exist any more.`,
  ].join('\n');
}

/** Replays every history of the corpus (or `entries`) with `bundle`; one outcome per entry, in order. */
export async function replayCorpus(
  bundle: WorkflowBundleWithSourceMap,
  entries = loadIndex(),
): Promise<ReplayOutcome[]> {
  const histories = entries.map((entry) => ({
    // The replay id only labels the result: the file names the history.
    workflowId: entry.file,
    history: JSON.parse(readFileSync(path.join(HISTORIES_DIR, entry.file), 'utf8')) as unknown,
  }));
  const updateWithStart = new Set(
    histories.filter((h) => startedByUpdateWithStart(h.history)).map((h) => h.workflowId),
  );
  const byFile = new Map<string, string | undefined>();
  for await (const result of Worker.runReplayHistories(
    { workflowBundle: bundle, replayName: 'replay-corpus', sinks: workflowTracingSinks(undefined) },
    histories,
  )) {
    byFile.set(result.workflowId, result.error ? String((result.error as Error).message ?? result.error) : undefined);
  }
  return entries.map((entry) => {
    if (!byFile.has(entry.file)) return { entry, error: 'the replayer returned no result for this history' };
    const error = byFile.get(entry.file);
    if (error === undefined) return { entry };
    if (updateWithStart.has(entry.file) && REPLAYER_UPDATE_WITH_START_FAILURE.test(error))
      return { entry, replayerLimitation: true };
    return { entry, error: incompatibilityMessage(entry, error) };
  });
}
