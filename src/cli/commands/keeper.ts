// `keep` and `publish`: ensure a domain's bundle keeper runs (with one sink), and tell it about new
// content. The sink options and the keeper input they describe are shared with `schedule create`.
import { Command, Option } from 'commander';
import { checkInput, ensureKeeper, InvalidInputError, keeperInputProblems, publish } from '../../client';
import { DEPLOYMENT_KINDS } from '../../policies/validation/deployment';
import { domainProblems } from '../../policies/validation/export';
import type { BundleKeeperInput, DeploymentKind, SinkConfig } from '../../shared/bundle-keeper';
import type { CliContext } from '../context';
import { jsonLine } from '../format';
import { type SourceOpts, addSourceOptions, sourceFrom } from './source-options';

export interface SinkOpts {
  configFile?: string;
  webhook?: string;
  command?: string;
  mirrorDir?: string;
  mirrorUrlPrefix?: string;
  version?: string;
  kind?: string;
}

function sinkFrom(opts: SinkOpts): SinkConfig {
  const chosen: SinkConfig[] = [];
  if (opts.configFile !== undefined) chosen.push({ type: 'file', path: opts.configFile });
  if (opts.webhook !== undefined) chosen.push({ type: 'webhook', url: opts.webhook });
  if (opts.command !== undefined) chosen.push({ type: 'command', command: opts.command });
  if (opts.mirrorDir !== undefined || opts.mirrorUrlPrefix !== undefined) {
    if (opts.mirrorDir === undefined || opts.mirrorUrlPrefix === undefined) {
      throw new InvalidInputError(['the mirror sink needs both --mirror-dir and --mirror-url-prefix']);
    }
    chosen.push({ type: 'mirror', dir: opts.mirrorDir, urlPrefix: opts.mirrorUrlPrefix });
  }
  if (chosen.length !== 1) {
    throw new InvalidInputError([
      'give exactly one sink: --config-file F, --webhook URL, --command CMD, or --mirror-dir DIR --mirror-url-prefix URL',
    ]);
  }
  return chosen[0] as SinkConfig;
}

/** The keeper input the sink options describe; throws InvalidInputError when it is not valid. */
export function keeperInputFrom(domain: string, opts: SinkOpts): BundleKeeperInput {
  const input: BundleKeeperInput = { domain, sink: sinkFrom(opts) };
  if (opts.version !== undefined) input.version = opts.version;
  if (opts.kind !== undefined) input.kind = opts.kind as DeploymentKind;
  checkInput(keeperInputProblems(input));
  return input;
}

export function addSinkOptions(command: Command): Command {
  return command
    .option(
      '--config-file <file>',
      'sink: write staticExport.{enabled,bundleUrl,version} into this YAML/JSON config file',
    )
    .option('--webhook <url>', 'sink: POST the verified bundle link to this URL')
    .option('--command <cmd>', 'sink: run this command (e.g. helm upgrade ...) with the link in its environment')
    .option('--mirror-dir <dir>', 'sink (air-gapped): copy the archive into this directory ...')
    .option('--mirror-url-prefix <url>', '... served at this stable internal URL prefix')
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
