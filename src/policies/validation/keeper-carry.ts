// bundleKeeper's carry, where it enters a run: checked (src/policies/validation/carry.ts says why only a
// continued run may hold one) and decoded once into today's BundleKeeperCarry, whichever release wrote it,
// so the keeper itself reads one shape. Pure and sandbox-safe.
import {
  type BundleKeeperCarry,
  type BundleKeeperInput,
  type CarriedExport,
  type KeeperSink,
  SINK_NAME_FORM,
  SINK_TYPES,
  type SinkType,
} from '../../shared/bundle-keeper';
import type { PublishedCommit, PublishingState } from '../../shared/publishing';
import {
  type CarryCheck,
  count,
  flag,
  id,
  isRecord,
  link,
  listOf,
  must,
  nullable,
  observations,
  oneOf,
  optional,
  record,
  text,
  time,
  variants,
} from './carry';

const commit = record({
  sha: text,
  ref: nullable(text),
  message: nullable(text),
  pullRequest: nullable(record({ number: count, url: text })),
  agentWorkflowId: nullable(text),
  requestedAtMs: time,
});

const publishingFields = {
  wantedSinceMs: nullable(time),
  wantedShas: listOf(text),
  round: nullable(
    record({
      statusId: id,
      startedAtMs: time,
      requestedAtMs: time,
      coveredShas: listOf(text),
      observations,
      nextPollAtMs: time,
      failedPolls: count,
      sha: nullable(text),
      status: text,
    }),
  ),
  lastUpdate: nullable(
    record({ statusId: nullable(text), status: text, sha: nullable(text), endedAtMs: time, error: nullable(text) }),
  ),
  pendingSinceMs: nullable(time),
  deliveries: listOf(text),
  builtShas: listOf(text),
  pullRequests: listOf(record({ sha: text, number: count, url: text, agentWorkflowId: nullable(text) })),
  updatesDone: count,
  updatesFailed: count,
};

const sinkName: CarryCheck = (v, at) =>
  typeof v === 'string' && SINK_NAME_FORM.test(v) ? [] : must(at, 'a sink name');

/** What it applied and is about to apply: the same in every release's carry. */
const bundles = {
  current: nullable(
    record({
      jobId: id,
      appliedUrl: text,
      appliedExpiresAt: nullable(text),
      linkIssuedAtMs: time,
      sizeBytes: count,
      version: nullable(text),
      appliedAt: text,
      refreshAtMs: nullable(time),
      refreshFailures: count,
      commit: optional(nullable(commit)),
    }),
  ),
  pending: nullable(
    record({
      jobId: id,
      version: nullable(text),
      bundle: nullable(record({ bundleUrl: link, expiresAt: text, sizeBytes: count })),
      failures: count,
      retryAtMs: nullable(time),
      commit: optional(nullable(commit)),
    }),
  ),
  version: nullable(text),
  exportsDone: count,
  refreshesDone: count,
  paused: flag,
  lastError: nullable(text),
  generation: count,
};

/** Today's BundleKeeperCarry: what it applied, what it is about to apply and export, and its sink. */
const carryShape = record({
  ...bundles,
  export: variants({
    idle: {},
    wanted: { commit: nullable(commit), retryAtMs: nullable(time), failures: count },
  }),
  sink: variants({
    resolving: {},
    resolved: { name: sinkName, type: oneOf(SINK_TYPES) },
    refused: { reason: text, checks: count, retryAtMs: time },
  }),
  publishing: optional(record(publishingFields)),
});

/**
 * The carry of a02d727 and earlier: its export and sink as flags, `publishing.ready` the commit owed an
 * export, no `builtShas`. Checked as what it decodes to. Drop when no keeper of a02d727 or earlier runs.
 */
interface FlagsCarry extends Omit<BundleKeeperCarry, 'export' | 'sink' | 'publishing'> {
  exportWanted: boolean;
  exportFailures: number;
  exportRetryAtMs: number | null;
  sinkResolved?: { name: string; type: SinkType } | null;
  sinkRefused?: { reason: string; checks: number; retryAtMs: number } | null;
  publishing?: Partial<PublishingState> & { ready?: PublishedCommit | null };
}

function fromFlags(carry: FlagsCarry): BundleKeeperCarry {
  const { exportWanted, exportFailures, exportRetryAtMs, sinkResolved, sinkRefused, publishing, ...rest } = carry;
  const wanted: CarriedExport = exportWanted
    ? { state: 'wanted', commit: publishing?.ready ?? null, retryAtMs: exportRetryAtMs, failures: exportFailures }
    : { state: 'idle' };
  let sink: KeeperSink = { state: 'resolving' };
  if (sinkRefused) sink = { state: 'refused', ...sinkRefused };
  if (sinkResolved) sink = { state: 'resolved', ...sinkResolved };
  if (!isRecord(publishing)) return { ...rest, export: wanted, sink, ...(publishing ? { publishing } : {}) };
  const { ready: _exported, builtShas = [], pendingSinceMs = null, ...ps } = publishing;
  return { ...rest, export: wanted, sink, publishing: { ...ps, builtShas, pendingSinceMs } as PublishingState };
}

const decode = (carry: unknown): unknown =>
  isRecord(carry) && 'exportWanted' in carry ? fromFlags(carry as unknown as FlagsCarry) : carry;

/** Every problem with a keeper's carry (of any release: as what it decodes to). */
export const keeperCarryProblems: CarryCheck = (v, at) => carryShape(decode(v), at);

/**
 * The carry fields of a keeper's input, for carriedStateProblems. `carried` is the name releases before
 * `carry` wrote (with flags): drop it with FlagsCarry.
 */
export function keeperCarries(input: object): Record<string, unknown> {
  const { carry, carried } = input as { carry?: unknown; carried?: unknown };
  return { carry, carried };
}

/** Today's carry from the checked input of a continued run, whichever release wrote it; null in a start. */
export function decodeKeeperCarry(input: object): BundleKeeperCarry | null {
  const { carry, carried } = keeperCarries(input);
  const given = carry ?? carried;
  return given ? { ...(decode(given) as BundleKeeperCarry) } : null;
}

/** The next run's input: this one's with today's carry (`carried`, as releases before `carry` named it, dropped). */
export function nextKeeperInput(input: BundleKeeperInput, carry: BundleKeeperCarry): BundleKeeperInput {
  const { carried: _earlier, ...rest } = input as BundleKeeperInput & { carried?: unknown };
  return { ...rest, carry };
}
