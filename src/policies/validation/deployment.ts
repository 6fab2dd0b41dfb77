// Deployment kinds and the features each can have (docs/contract.md, the self-hosted deployment table).
// Pure rules, shared by the bundleKeeper workflow (checked at start) and the CLI.
import { type DeploymentFeature, type DeploymentKind, SINK_NAME_FORM, type SinkType } from '../../shared/bundle-keeper';

/** yes: always on; configurable: the operator chooses; no: the kind cannot have it. */
export type Availability = 'yes' | 'configurable' | 'no';

export const DEPLOYMENT_KINDS: readonly DeploymentKind[] = ['cloud', 'client-hosted', 'air-gapped'];

export const DEPLOYMENT_FEATURES: readonly DeploymentFeature[] = [
  'search',
  'assistant',
  'analytics',
  'apiPlayground',
  'staticExport',
];

/** docs/contract.md's table, row by row. */
export const FEATURE_TABLE: Readonly<Record<DeploymentKind, Readonly<Record<DeploymentFeature, Availability>>>> = {
  cloud: { search: 'yes', assistant: 'yes', analytics: 'yes', apiPlayground: 'yes', staticExport: 'yes' },
  'client-hosted': {
    search: 'configurable',
    assistant: 'configurable',
    analytics: 'configurable',
    apiPlayground: 'yes',
    staticExport: 'yes',
  },
  'air-gapped': { search: 'no', assistant: 'no', analytics: 'no', apiPlayground: 'configurable', staticExport: 'yes' },
};

const FEATURE_LABEL: Record<DeploymentFeature, string> = {
  search: 'documentation search',
  assistant: 'AI assistant',
  analytics: 'web analytics',
  apiPlayground: 'API playground',
  staticExport: 'static export bundle',
};

export function isDeploymentKind(value: unknown): value is DeploymentKind {
  return typeof value === 'string' && (DEPLOYMENT_KINDS as readonly string[]).includes(value);
}

export interface DeploymentRequest {
  kind?: unknown;
  features?: unknown;
  /** The sink type the keeper would apply bundles through. */
  sinkType?: SinkType;
}

/**
 * Every conflict between a deployment kind, the features asked of it and the sink, each a sentence;
 * empty when the request fits the table. Kind defaults to client-hosted (a self-hosted deployment that
 * can reach the presigned link).
 */
export function deploymentProblems(request: DeploymentRequest): string[] {
  const problems: string[] = [];
  const kind = request.kind ?? 'client-hosted';
  if (!isDeploymentKind(kind)) {
    return [`deployment kind must be one of ${DEPLOYMENT_KINDS.join(', ')} (got ${JSON.stringify(kind)})`];
  }
  const row = FEATURE_TABLE[kind];
  if (request.features !== undefined && request.features !== null) {
    if (typeof request.features !== 'object' || Array.isArray(request.features)) {
      problems.push('features must be an object of feature name -> boolean');
    } else {
      for (const [name, wanted] of Object.entries(request.features as Record<string, unknown>)) {
        if (!(DEPLOYMENT_FEATURES as readonly string[]).includes(name)) {
          problems.push(`unknown feature "${name}" (known: ${DEPLOYMENT_FEATURES.join(', ')})`);
          continue;
        }
        if (typeof wanted !== 'boolean') {
          problems.push(`feature ${name} must be true or false`);
          continue;
        }
        const feature = name as DeploymentFeature;
        const availability = row[feature];
        if (wanted && availability === 'no') {
          problems.push(
            `a ${kind} deployment cannot have ${FEATURE_LABEL[feature]} (${feature}); remove it or choose another kind`,
          );
        } else if (!wanted && availability === 'yes') {
          problems.push(
            `a ${kind} deployment always has ${FEATURE_LABEL[feature]} (${feature}); it cannot be turned off`,
          );
        }
      }
    }
  }
  if (kind === 'air-gapped' && request.sinkType !== undefined && request.sinkType !== 'mirror') {
    problems.push(
      `an air-gapped deployment cannot fetch the presigned bundle link, so it needs the mirror sink (got "${request.sinkType}")`,
    );
  }
  return problems;
}

/** Problems with a keeper's sink, as its client sees it: the name of a sink in the worker's sinks file. */
export function sinkNameProblems(sink: unknown): string[] {
  if (typeof sink !== 'string')
    return ['sink must be the name of a sink in the worker\'s sinks file (KEEPER_SINKS_FILE), e.g. "prod-config"'];
  return SINK_NAME_FORM.test(sink) ? [] : ['sink must be a sink name: 1-64 characters of A-Z a-z 0-9 . _ -'];
}
