// `keep --project P --repository URL --ref REF`: the keeper's source (publishing builds it before exporting).
import type { Command } from 'commander';
import { InvalidInputError } from '../../client';
import type { KeeperSource } from '../../shared/publishing';

export interface SourceOpts {
  project?: string;
  repository?: string;
  ref?: string;
}

export function addSourceOptions(command: Command): Command {
  return command
    .option('--project <id>', 'source: the admin API project whose deployment branch a publish builds first ...')
    .option('--repository <url>', '... its docs repository (https URL) ...')
    .option('--ref <branch>', '... and deployment branch (e.g. main)');
}

/** The source the options describe, undefined when none is given; all three or none. */
export function sourceFrom(opts: SourceOpts): KeeperSource | undefined {
  const given = [opts.project, opts.repository, opts.ref].filter((v) => v !== undefined).length;
  if (given === 0) return undefined;
  if (given !== 3) throw new InvalidInputError(['a source needs all of --project, --repository and --ref']);
  return { projectId: opts.project!, repository: opts.repository!, ref: opts.ref! };
}
