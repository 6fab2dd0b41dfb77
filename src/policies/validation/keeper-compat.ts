// What keepers of earlier releases wrote, decoded once where it enters a run (validate() checks it as
// what it decodes to, src/policies/validation/carry.ts), so the keeper reads today's BundleKeeperCarry
// only. Pure and sandbox-safe.
import type {
  BundleKeeperCarry,
  BundleKeeperInput,
  CarriedExport,
  KeeperSink,
  SinkType,
} from '../../shared/bundle-keeper';
import type { PublishedCommit, PublishingState } from '../../shared/publishing';
import { isRecord } from '../../shared/shapes';

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

/** A carry in today's shape: one with flags decoded, any other as it is (checked next). */
export const decodeFlagsCarry = (carry: unknown): unknown =>
  isRecord(carry) && 'exportWanted' in carry ? fromFlags(carry as unknown as FlagsCarry) : carry;

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
  return given ? { ...(decodeFlagsCarry(given) as BundleKeeperCarry) } : null;
}

/** The next run's input: this one's with today's carry (`carried`, as releases before `carry` named it, dropped). */
export function nextKeeperInput(input: BundleKeeperInput, carry: BundleKeeperCarry): BundleKeeperInput {
  const { carried: _earlier, ...rest } = input as BundleKeeperInput & { carried?: unknown };
  return { ...rest, carry };
}
