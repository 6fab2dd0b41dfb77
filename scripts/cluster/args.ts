// The command line of `npm run cluster`, parsed without side effects (test/unit/cluster-nodes.test.ts).
import { MAX_NODES } from './layout';
import { parseHistoryShards } from './shards';

export const USAGE =
  'usage: npm run cluster [-- [--nodes N] [--tuned] [--tls] [--sso] [--monitoring] [--history-shards N] | --status [--json] | --stop]';

export type ClusterCommand =
  | {
      action: 'up';
      nodes: number;
      tuned: boolean;
      tls: boolean;
      /** Sign-on: the OpenID provider, the server's JWT authorizer, the Web UI's login (scripts/cluster/sso.ts). */
      sso: boolean;
      monitoring: boolean;
      /** Only for a cluster this run creates (scripts/cluster/shards.ts). */
      historyShards?: number;
    }
  | { action: 'status'; json: boolean }
  | { action: 'stop' };

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** "--nodes" value: a whole number from 1 to MAX_NODES. */
export function parseNodes(raw: string | undefined): number {
  const value = Number(raw);
  if (!raw || !Number.isInteger(value) || value < 1 || value > MAX_NODES)
    throw new UsageError(`--nodes ${raw ?? ''}: a whole number from 1 to ${MAX_NODES}`);
  return value;
}

/** `--name value` and `--name=value` alike: [flags, values by name]. */
function split(argv: readonly string[], valued: readonly string[]): [Set<string>, Map<string, string | undefined>] {
  const flags = new Set<string>();
  const values = new Map<string, string | undefined>();
  for (let i = 0; i < argv.length; i++) {
    const [name = '', inline] = argv[i]!.split(/=(.*)/s, 2);
    if (valued.includes(name)) values.set(name, inline ?? argv[++i]);
    else if (inline !== undefined) throw new UsageError(`${name} takes no value`);
    else flags.add(name);
  }
  return [flags, values];
}

export function parseClusterArgs(argv: readonly string[]): ClusterCommand {
  const [flags, values] = split(argv, ['--nodes', '--history-shards']);
  const known = ['--tuned', '--tls', '--sso', '--monitoring', '--stop', '--status', '--json'];
  const unknown = [...flags].filter((f) => !known.includes(f));
  if (unknown.length) throw new UsageError(`unknown option ${unknown.join(', ')}`);
  const upOptions = ['--tuned', '--tls', '--sso', '--monitoring']
    .filter((f) => flags.has(f))
    .concat([...values.keys()]);
  if (flags.has('--stop')) {
    const others = [...flags, ...values.keys()].filter((f) => f !== '--stop');
    if (others.length) throw new UsageError(`--stop takes no other option (${others.join(', ')})`);
    return { action: 'stop' };
  }
  if (flags.has('--status')) {
    if (upOptions.length) throw new UsageError(`--status only reports (${upOptions.join(', ')})`);
    return { action: 'status', json: flags.has('--json') };
  }
  if (flags.has('--json')) throw new UsageError('--json goes with --status');
  const shards = values.get('--history-shards');
  let historyShards: number | undefined;
  try {
    historyShards = values.has('--history-shards') ? parseHistoryShards(shards) : undefined;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  return {
    action: 'up',
    nodes: values.has('--nodes') ? parseNodes(values.get('--nodes')) : 1,
    tuned: flags.has('--tuned'),
    tls: flags.has('--tls'),
    sso: flags.has('--sso'),
    monitoring: flags.has('--monitoring'),
    ...(historyShards !== undefined ? { historyShards } : {}),
  };
}

/**
 * The one line `npm run cluster` prints about what it leaves open (null when `--tls --sso` closes it): the
 * cluster is for development on this machine; docker-compose.yml is the closed deployment.
 */
export function openNotice({ tls, sso }: { tls: boolean; sso: boolean }): string | null {
  if (tls && sso) return null;
  const open = [tls ? '' : 'no TLS', sso ? '' : 'no sign-on'].filter(Boolean).join(', ');
  return `open: ${open}, on loopback only; \`--tls --sso\` closes it`;
}
