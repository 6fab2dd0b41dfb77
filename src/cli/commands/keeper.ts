// `keep` and `publish`: ensure a domain's bundle keeper runs (with one named sink), and tell it about new
// content. The sink options and the keeper input they describe are shared with `schedule create`.
import { Command, Option } from 'commander';
import { checkInput, ensureKeeper, InvalidInputError, keeperInputProblems, publish } from '../../client';
import { DEPLOYMENT_KINDS } from '../../policies/validation/deployment';
import { domainProblems } from '../../policies/validation/export';
import type { BundleKeeperInput, DeploymentKind } from '../../shared/bundle-keeper';
import type { CliContext } from '../context';
import { jsonLine } from '../format';
import { type SourceOpts, addSourceOptions, sourceFrom } from './source-options';

export interface SinkOpts {
  sink?: string;
  version?: string;
  kind?: string;
}

/** The keeper input the sink options describe; throws InvalidInputError when it is not valid. */
export function keeperInputFrom(domain: string, opts: SinkOpts): BundleKeeperInput {
  if (opts.sink === undefined)
    throw new InvalidInputError(["give --sink <name>: a sink of the worker's sinks file (KEEPER_SINKS_FILE)"]);
  const input: BundleKeeperInput = { domain, sink: opts.sink };
  if (opts.version !== undefined) input.version = opts.version;
  if (opts.kind !== undefined) input.kind = opts.kind as DeploymentKind;
  checkInput(keeperInputProblems(input));
  return input;
}

export function addSinkOptions(command: Command): Command {
  return command
    .option('--sink <name>', "the sink of the worker's sinks file (KEEPER_SINKS_FILE) that applies the bundle")
    .option('--version <version>', 'pin staticExport.version (default: the latest published)')
    .addOption(
      new Option('--kind <kind>', 'deployment kind')
        .choices(DEPLOYMENT_KINDS as string[])
        .default(undefined, 'client-hosted'),
    );
}

export function keepCommand({ io, client, wire }: CliContext): Command {
  return addSourceOptions(
    addSinkOptions(
      wire(new Command('keep'))
        .description(
          "Ensure the domain's bundle keeper runs: it keeps the deployment on a valid, verified bundle link.",
        )
        .requiredOption('--domain <domain>', 'bare hostname of the docs site'),
    ),
  )
    .option('--json', 'print JSON')
    .action(async (opts: SinkOpts & SourceOpts & { domain: string; json?: boolean }) => {
      const source = sourceFrom(opts);
      const input = keeperInputFrom(opts.domain, opts);
      if (source) {
        input.source = source;
        checkInput(keeperInputProblems(input));
      }
      const handle = await ensureKeeper(await client(), input);
      io.stdout.write(opts.json ? jsonLine({ workflowId: handle.workflowId }) : `${handle.workflowId}\n`);
    });
}

export function publishCommand({ io, client, wire }: CliContext): Command {
  return wire(new Command('publish'))
    .description("Tell the domain's keeper that new content is published (it re-exports and re-applies).")
    .requiredOption('--domain <domain>', 'bare hostname of the docs site')
    .action(async (opts: { domain: string }) => {
      checkInput(domainProblems(opts.domain));
      const { workflowId } = await publish(await client(), opts.domain);
      io.stdout.write(`publish signalled to ${workflowId}\n`);
    });
}
