// `agent`: start an agent job (returns once the API job exists), or run it to the end with --wait.
import { Command } from 'commander';
import { awaitAgentJob, checkInput, startAgentJob } from '../../client';
import { validateAgentJobInput } from '../../policies/validation/agent';
import type { AgentStatus } from '../../shared/agent-job';
import type { CliContext, StartCommandOpts } from '../context';
import { agentResultText, jsonLine, type AgentOutput } from '../format';
import { agentReporter, waitReporting } from '../progress';

interface AgentOpts extends StartCommandOpts {
  project: string;
  prompt: string;
}

export function agentCommand(ctx: CliContext): Command {
  return ctx
    .wire(new Command('agent'))
    .description('Run an agent job: a prompt in, a pull request out.')
    .requiredOption('--project <projectId>', 'project id')
    .requiredOption('--prompt <text>', 'what the agent should change')
    .option('--request-id <id>', 'idempotency key: the same id never creates a second job (or a second PR)')
    .option('--wait', 'wait for the job to finish, showing its status on stderr')
    .option('--json', 'print JSON (with --wait, the last stdout line is the result object)')
    .action((opts: AgentOpts) => runAgentCommand(ctx, opts));
}

async function runAgentCommand({ io, client }: CliContext, opts: AgentOpts): Promise<void> {
  const input = {
    projectId: opts.project,
    prompt: opts.prompt,
    ...(opts.requestId !== undefined ? { requestId: opts.requestId } : {}),
  };
  checkInput(validateAgentJobInput(input));
  const c = await client();
  const needsOperator = (status: AgentStatus) =>
    void io.stderr.write(
      `the job needs an operator: ${status.parked?.check ?? 'its outcome is unknown'}; waiting for ` +
        `\`docs-admin resolve|resend|abandon\` (see \`docs-admin status\`)\n`,
    );
  const started = await startAgentJob(c, input, { onNeedsOperator: needsOperator });
  if (!opts.wait) {
    io.stdout.write(
      opts.json
        ? jsonLine({ workflowId: started.workflowId, jobId: started.jobId })
        : `${started.workflowId}\n${started.jobId}\n`,
    );
    return;
  }
  io.stderr.write(`started ${started.workflowId} (job ${started.jobId})\n`);
  const { workflowId, jobId, status, prLink } = await waitReporting(
    agentReporter(io.stderr, started.jobId),
    (progress) =>
      awaitAgentJob(c, started.workflowId, { ...progress, progressIntervalMs: 1_000, onNeedsOperator: needsOperator }),
    (result, last): AgentStatus => ({
      phase: 'done',
      jobId: result.jobId,
      status: result.status,
      prLink: result.prLink,
      polls: last?.polls ?? 0,
      lastPollAt: null,
      nextPollAt: null,
    }),
  );
  const out: AgentOutput = { workflowId, jobId, status, prLink };
  io.stdout.write(opts.json ? jsonLine(out) : agentResultText(out));
}
