// bundleKeeper input validation, once: the client library and the CLI check an input before starting a
// keeper, and the workflow checks it again (other services start it by type name with any JSON). The
// workflow leaves the sink to the worker (resolveSink): a name it does not hold, or an inline sink, is
// refused in the keeper's status rather than failing it, and the kind is checked against the sink's type.
import type { BundleKeeperInput } from '../../shared/bundle-keeper';
import { refreshMarginProblems } from '../keeper-schedule';
import { startCarryProblems } from './carry';
import { deploymentProblems, sinkNameProblems } from './deployment';
import { hostnameProblem } from './export';
import { keeperSourceProblems } from './publish';

export interface KeeperInputCheck {
  /** What makes the input unusable (the workflow fails with InvalidInput). */
  problems: string[];
  /** What the deployment kind forbids (DeploymentKindConflict); the sink's type is the worker's to check. */
  conflicts: string[];
}

export function checkKeeperInput(
  input: unknown,
  options: { sink: 'name' | 'worker' } = { sink: 'name' },
): KeeperInputCheck {
  if (typeof input !== 'object' || input === null) return { problems: ['input must be an object'], conflicts: [] };
  const keeper = input as BundleKeeperInput;
  const problems: string[] = [];
  const domainProblem = hostnameProblem(keeper.domain);
  if (domainProblem) problems.push(domainProblem);
  if (options.sink === 'name') problems.push(...sinkNameProblems(keeper.sink));
  problems.push(...refreshMarginProblems(keeper.refreshMargin), ...keeperSourceProblems(keeper.source));
  if (keeper.version !== undefined && (typeof keeper.version !== 'string' || keeper.version.trim() === '')) {
    problems.push('version, when given, must be a non-empty string');
  }
  const cycles = keeper.continueAsNewAfterCycles;
  if (cycles !== undefined && !(Number.isInteger(cycles) && cycles >= 1))
    problems.push('continueAsNewAfterCycles must be an integer >= 1');
  const conflicts = deploymentProblems({ kind: keeper.kind, features: keeper.features });
  return { problems, conflicts };
}

/** Every problem with a bundleKeeper input a caller starts (no carried state), conflicts included; empty when valid. */
export function keeperInputProblems(input: BundleKeeperInput): string[] {
  const { problems, conflicts } = checkKeeperInput(input);
  return [...problems, ...startCarryProblems(input, ['carry', 'carried']), ...conflicts];
}
