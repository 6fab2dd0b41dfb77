// The bundleKeeper workflow's contract: its id, input, status query, signals and continue-as-new carry.
import { defineQuery, defineSignal } from '@temporalio/workflow';
import {
  type KeeperSource,
  type PublishRequest,
  type PublishingStatus,
  publishedCommit,
  publishingState,
} from './publishing';
import {
  count,
  flag,
  id,
  link,
  matching,
  nullable,
  oneOf,
  optional,
  record,
  text,
  time,
  variants,
  type Shaped,
} from './shapes';

export type { KeeperSource, PublishRequest, PublishedCommit, PublishingStatus } from './publishing';

/** One keeper per domain: starting it again attaches to the running one. */
export const keeperWorkflowId = (domain: string): string => `bundle-keeper:${domain}`;

export type DeploymentKind = 'cloud' | 'client-hosted' | 'air-gapped';

export const SINK_TYPES = ['file', 'webhook', 'command', 'mirror'] as const;
export type SinkType = (typeof SINK_TYPES)[number];

/**
 * An inline sink object, as keepers started before named sinks hold it in their input. Refused at a
 * new start; a continued keeper goes on with it only where the worker's sinks file holds an equal sink.
 */
export type InlineSink =
  | { type: 'file'; path: string }
  | { type: 'webhook'; url: string }
  | { type: 'command'; command: string }
  | { type: 'mirror'; dir: string; urlPrefix: string; keep?: number };

/** What the worker's sinks file answered for a keeper's sink (the resolveSink activity). */
export type SinkResolution = { name: string; type: SinkType } | { refused: string };

/** ApplicationFailure type of an apply whose sink the worker no longer holds (the keeper checks again). */
export const SINK_REFUSED = 'SinkRefused';

/** Features of a self-hosted deployment (docs/contract.md, the self-hosted deployment table); rules in src/policies/validation/deployment.ts. */
export type DeploymentFeature = 'search' | 'assistant' | 'analytics' | 'apiPlayground' | 'staticExport';
export type DeploymentFeatures = Partial<Record<DeploymentFeature, boolean>>;

/** How long before a link expires the keeper refreshes it: `fraction` of the link's lifetime, at least `minMs`. */
export interface RefreshMargin {
  /** Default 0.1 (10 % of the lifetime). */
  fraction?: number;
  /** Default 60 000 (one minute). */
  minMs?: number;
}

export interface BundleKeeperInput {
  domain: string;
  /** The name of a sink in the worker's KEEPER_SINKS_FILE (docs/contract.md). */
  sink: string;
  /** Default client-hosted. */
  kind?: DeploymentKind;
  /** Pins staticExport.version (default: the latest published). */
  version?: string;
  features?: DeploymentFeatures;
  /**
   * Where the content comes from: with it, a publish first has the platform build the branch
   * (a deployment update of projectId) and exports once that update succeeded (src/workflows/publishing.ts).
   */
  source?: KeeperSource;
  refreshMargin?: RefreshMargin;
  /**
   * Continue as new after this many refresh/export cycles even when the server does not suggest it.
   * Default: only when workflowInfo().continueAsNewSuggested (tests set a small number).
   */
  continueAsNewAfterCycles?: number;
  /** State from the previous run (set by the keeper itself when it continues as new; refused in a start). */
  carry?: BundleKeeperCarry;
}

/** What a keeper is doing now: the status query's `state`, the Web UI's words for it (paused first). */
export type KeeperPhase =
  'starting' | 'checking-sink' | 'sink-refused' | 'exporting' | 'installing' | 'keeping' | 'paused';

export interface KeeperStatus {
  /** What it is doing now; `installing`: a new bundle (`pendingJobId`) is being verified and applied. */
  state?: KeeperPhase;
  /** The export whose bundle is being verified and applied (retried with back-off until it is). */
  pendingJobId?: string | null;
  jobId: string | null;
  bundleUrl: string | null;
  expiresAt: string | null;
  version: string | null;
  lastAppliedAt: string | null;
  nextRefreshAt: string | null;
  exportsDone: number;
  refreshesDone: number;
  paused: boolean;
  /** Why the last export/refresh/apply attempt failed (cleared on success). */
  lastError?: string | null;
  /** An export is running right now. */
  exporting?: boolean;
  /** A publish/pin is waiting for the running export to finish. */
  exportWanted?: boolean;
  /** Why the worker refused the keeper's sink (it applies nothing until the sinks file holds it). */
  sinkRefused?: string | null;
  /** Keepers with a source: the commit applied, the deployment update, the publishes waiting. */
  publishing?: PublishingStatus;
}

/** No argument: new content is published. With one (a push or merge, untrusted): see PublishRequest. */
export const publishSignal = defineSignal<[request?: PublishRequest]>('publish');
export const pinVersionSignal = defineSignal<[version: string | null]>('pin');
export const pauseSignal = defineSignal('pause');
export const resumeSignal = defineSignal('resume');
export const keeperStatusQuery = defineQuery<KeeperStatus>('status');

/** A sink's name in the worker's sinks file (and in a keeper's input). */
export const SINK_NAME_FORM = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const nullableText = nullable(text);
/** Keepers with a source: the commit the bundle or export renders. */
const commit = optional(nullable(publishedCommit));

/** The bundle a keeper last applied. Plain JSON (carried across continue-as-new). */
const appliedBundle = record({
  jobId: id,
  /** The URL the deployment was configured with (the presigned link, or the mirror's stable URL). */
  appliedUrl: text,
  /** When appliedUrl stops working; null when it does not expire (mirror). */
  appliedExpiresAt: nullableText,
  /** Workflow time (ms) at which the applied link was generated (or received from the export). */
  linkIssuedAtMs: time,
  sizeBytes: count,
  version: nullableText,
  appliedAt: text,
  /** Workflow time (ms) of the next refresh; null when the applied URL does not expire. */
  refreshAtMs: nullable(time),
  /** Consecutive failed refreshes of this job's link (drives the back-off). */
  refreshFailures: count,
  commit,
});
export type AppliedBundle = Shaped<typeof appliedBundle>;

/** An exported job whose bundle is still to be verified and applied. Plain JSON. */
const pendingBundle = record({
  jobId: id,
  version: nullableText,
  /** The link the export returned, used for the first attempt; later attempts generate a fresh one. */
  bundle: nullable(record({ bundleUrl: link, expiresAt: text, sizeBytes: count })),
  failures: count,
  /** Workflow time (ms) of the next attempt; null = now. */
  retryAtMs: nullable(time),
  commit,
});
export type PendingBundle = Shaped<typeof pendingBundle>;

/** The export the keeper owes, between runs: none, or one wanted (the commit it renders, its back-off). */
const carriedExport = variants({
  idle: {},
  wanted: {
    /** Keepers with a source: the built commit the export renders (null: the branch as it is). */
    commit: nullable(publishedCommit),
    /** Workflow time (ms) before which it does not start (a failed export's back-off); null: now. */
    retryAtMs: nullable(time),
    /** Consecutive failed exports so far. */
    failures: count,
  },
});
export type CarriedExport = Shaped<typeof carriedExport>;

/** The sink as the worker last answered for it: not asked yet (or to ask again), held, or refused. */
const keeperSink = variants({
  resolving: {},
  resolved: { name: matching(SINK_NAME_FORM, 'a sink name'), type: oneOf(SINK_TYPES) },
  refused: { reason: text, checks: count, retryAtMs: time },
});
export type KeeperSink = Shaped<typeof keeperSink>;

/**
 * What a bundleKeeper run hands to the next one when it continues as new (one of an earlier release is
 * decoded first: src/policies/validation/keeper-compat.ts). Plain JSON.
 */
export const bundleKeeperCarry = record({
  current: nullable(appliedBundle),
  pending: nullable(pendingBundle),
  /** Pinned export version (null: latest published). */
  version: nullableText,
  exportsDone: count,
  refreshesDone: count,
  paused: flag,
  lastError: nullableText,
  /** Continue-as-new generations so far (for the Web UI and tests). */
  generation: count,
  export: carriedExport,
  sink: keeperSink,
  /** Keepers with a source. */
  publishing: optional(publishingState),
});
export type BundleKeeperCarry = Shaped<typeof bundleKeeperCarry>;
