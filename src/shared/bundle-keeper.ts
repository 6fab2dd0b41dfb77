// The bundleKeeper workflow's contract: its id, input, status query, signals and continue-as-new carry.
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { KeeperSource, PublishRequest, PublishedCommit, PublishingState, PublishingStatus } from './publishing';

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

/** The bundle a keeper last applied. Plain JSON (carried across continue-as-new). */
export interface AppliedBundle {
  jobId: string;
  /** The URL the deployment was configured with (the presigned link, or the mirror's stable URL). */
  appliedUrl: string;
  /** When appliedUrl stops working; null when it does not expire (mirror). */
  appliedExpiresAt: string | null;
  /** Workflow time (ms) at which the applied link was generated (or received from the export). */
  linkIssuedAtMs: number;
  sizeBytes: number;
  version: string | null;
  appliedAt: string;
  /** Workflow time (ms) of the next refresh; null when the applied URL does not expire. */
  refreshAtMs: number | null;
  /** Consecutive failed refreshes of this job's link (drives the back-off). */
  refreshFailures: number;
  /** Keepers with a source: the commit this bundle renders. */
  commit?: PublishedCommit | null;
}

/** An exported job whose bundle is still to be verified and applied. Plain JSON. */
export interface PendingBundle {
  jobId: string;
  version: string | null;
  /** The link the export returned, used for the first attempt; later attempts generate a fresh one. */
  bundle: { bundleUrl: string; expiresAt: string; sizeBytes: number } | null;
  failures: number;
  /** Workflow time (ms) of the next attempt; null = now. */
  retryAtMs: number | null;
  /** Keepers with a source: the commit this export renders. */
  commit?: PublishedCommit | null;
}

/** The export the keeper owes, between runs: none, or one wanted (the commit it renders, its back-off). */
export type CarriedExport =
  | { state: 'idle' }
  | {
      state: 'wanted';
      /** Keepers with a source: the built commit the export renders (null: the branch as it is). */
      commit: PublishedCommit | null;
      /** Workflow time (ms) before which it does not start (a failed export's back-off); null: now. */
      retryAtMs: number | null;
      /** Consecutive failed exports so far. */
      failures: number;
    };

/** The sink as the worker last answered for it: not asked yet (or to ask again), held, or refused. */
export type KeeperSink =
  | { state: 'resolving' }
  | { state: 'resolved'; name: string; type: SinkType }
  | { state: 'refused'; reason: string; checks: number; retryAtMs: number };

/** What a bundleKeeper run hands to the next one when it continues as new. Plain JSON. */
export interface BundleKeeperCarry {
  current: AppliedBundle | null;
  pending: PendingBundle | null;
  /** Pinned export version (null: latest published). */
  version: string | null;
  exportsDone: number;
  refreshesDone: number;
  paused: boolean;
  export: CarriedExport;
  sink: KeeperSink;
  lastError: string | null;
  /** Continue-as-new generations so far (for the Web UI and tests). */
  generation: number;
  /** Keepers with a source. */
  publishing?: PublishingState;
}

/** A sink's name in the worker's sinks file (and in a keeper's input). */
export const SINK_NAME_FORM = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
