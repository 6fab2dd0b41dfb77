// `parked` lists the agent jobs that wait for an operator (their create or message outcome was
// unknown); `resolve`, `resend`, `abandon` settle one. Each of those is an update on the job, validated
// before anything changes, and reports what happened even when the job closed in the same moment.
import { Command } from 'commander';
import {
  abandonAgentJob,
  checkInput,
  checkWorkflowId,
  listParkedAgentJobs,
  resendAgentJob,
  resolveAgentJob,
} from '../../client';
import { validateJobId, validateProjectId } from '../../policies/validation/agent';
import type { CliContext } from '../context';
import { jsonLine, parkedText } from '../format';

export function parkedCommand({ io, client, wire }: CliContext): Command {
  return wire(new Command('parked'))
    .description('List the agent jobs waiting for an operator, with what is unknown and the commands that settle them.')
    .option('--project <projectId>', 'only this project')
    .option('--json', 'print one JSON array')
    .action(async (opts: { project?: string; json?: boolean }) => {
      if (opts.project !== undefined) checkInput(validateProjectId(opts.project)); // before connecting
      const parked = await listParkedAgentJobs(await client(), { projectId: opts.project });
      io.stdout.write(opts.json ? jsonLine(parked) : parkedText(parked));
    });
}

export function resolveCommand({ io, client, wire }: CliContext): Command {
  return wire(new Command('resolve'))
    .description('The parked call took effect: the job adopts the given job id (checked in its project) and goes on.')
    .argument('<workflowId>', 'the parked agent job workflow id')
    .requiredOption('--job-id <id>', 'the job found in the platform dashboard')
    .option('--json', 'print one JSON object')
    .action(async (workflowId: string, opts: { jobId: string; json?: boolean }) => {
      checkInput([...checkWorkflowId(workflowId), ...validateJobId(opts.jobId)]); // before connecting
      const job = await resolveAgentJob(await client(), workflowId, opts.jobId);
      io.stdout.write(
        opts.json
          ? jsonLine({ workflowId, jobId: job.id, status: job.status, prLink: job.prLink })
          : `resolved ${workflowId}: job ${job.id} (${job.status}${job.prLink ? `, ${job.prLink}` : ''})\n`,
      );
    });
}

export function resendCommand({ io, client, wire }: CliContext): Command {
  return wire(new Command('resend'))
    .description('The parked call did not take effect (checked in the platform dashboard): make it again.')
    .argument('<workflowId>', 'the parked agent job workflow id')
    .action(async (workflowId: string) => {
      checkInput(checkWorkflowId(workflowId));
      await resendAgentJob(await client(), workflowId);
      io.stdout.write(`resending ${workflowId}\n`);
    });
}

export function abandonCommand({ io, client, wire }: CliContext): Command {
  return wire(new Command('abandon'))
    .description('Give a parked agent job up: it ends with OutcomeUnknown.')
    .argument('<workflowId>', 'the parked agent job workflow id')
    .option('--reason <text>', 'why (kept in the failure message)')
    .action(async (workflowId: string, opts: { reason?: string }) => {
      checkInput(checkWorkflowId(workflowId));
      await abandonAgentJob(await client(), workflowId, opts.reason);
      io.stdout.write(`abandoned ${workflowId}\n`);
    });
}
