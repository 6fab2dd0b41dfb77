// `status`: a workflow's state, its search attributes and its live `status` query.
import { Command } from 'commander';
import { getStatus, InvalidInputError } from '../../client';
import type { CliContext } from '../context';
import { jsonLine, statusText } from '../format';

export function statusCommand({ io, client, wire }: CliContext): Command {
  return wire(new Command('status'))
    .description("Show a workflow's state: execution status, summary, and its live `status` query.")
    .argument('<workflowId>', 'the workflow id (printed by export, agent and keep)')
    .option('--json', 'print one JSON object')
    .action(async (workflowId: string, opts: { json?: boolean }) => {
      if (workflowId.trim() === '') throw new InvalidInputError(['workflow id must not be empty']);
      const report = await getStatus(await client(), workflowId);
      io.stdout.write(opts.json ? jsonLine(report) : statusText(report));
    });
}
