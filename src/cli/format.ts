// Everything the CLI prints on stdout besides --json objects: one function per view, each returning
// the lines with their final newline.
import type { ParkedAgentJob } from '../client/parked';
import type { RekeyResult } from '../client/schedule-rekey';
import type { ScheduleView } from '../client/schedules';
import type { WorkflowStatusReport } from '../client/status';
import type { AgentJobResult, AgentStatus } from '../shared/agent-job';
import type { StaticExportResult } from '../shared/static-export';

/** One JSON object on one line (what --json prints). */
export function jsonLine(value: unknown): string {
  return `${JSON.stringify(value)}\n`;
}

/** What `export --wait` prints (docs/contract.md: these keys, in this order, for --json). */
export type ExportOutput = { workflowId: string } & Pick<
  StaticExportResult,
  'jobId' | 'domain' | 'pageCount' | 'bundleUrl' | 'expiresAt' | 'sizeBytes'
>;

export function exportResultText(out: ExportOutput): string {
  return (
    [
      `exported ${out.domain}: ${out.pageCount} pages, job ${out.jobId}`,
      `bundle:  ${out.bundleUrl}`,
      `size:    ${out.sizeBytes} bytes, link expires ${out.expiresAt}`,
      `workflow ${out.workflowId}`,
    ].join('\n') + '\n'
  );
}

/** What `agent --wait` prints (docs/contract.md: these keys, in this order, for --json). */
export type AgentOutput = { workflowId: string } & Pick<AgentJobResult, 'jobId' | 'status' | 'prLink'>;

export function agentResultText(out: AgentOutput): string {
  return `agent job ${out.jobId}: ${out.status}, ${out.prLink ? `pull request ${out.prLink}` : 'no pull request (nothing changed)'}\nworkflow ${out.workflowId}\n`;
}

export function statusText(report: WorkflowStatusReport): string {
  const lines = [
    `workflow ${report.workflowId} (${report.type})`,
    `  status:   ${report.status}`,
    ...(report.summary ? [`  summary:  ${report.summary}`] : []),
    `  started:  ${report.startTime}${report.closeTime ? `, closed ${report.closeTime}` : ''}`,
    ...Object.entries(report.searchAttributes).map(([k, v]) => `  ${k}: ${v}`),
    ...(report.details ? [`  details:  ${JSON.stringify(report.details)}`] : []),
    ...parkedLines(report.workflowId, report.details),
    ...(report.result !== undefined ? [`  result:   ${JSON.stringify(report.result)}`] : []),
    ...(report.failure ? [`  failure:  ${report.failure}`] : []),
  ];
  return `${lines.join('\n')}\n`;
}

/** A parked agent job: what to check and the three ways out, spelled out for the operator. */
function parkedLines(workflowId: string, details: WorkflowStatusReport['details']): string[] {
  const parked = (details as AgentStatus | null)?.parked;
  if (!parked) return [];
  return [
    `  NEEDS AN OPERATOR: the outcome of the ${parked.operation} call made between ${parked.from} and ${parked.to} is unknown`,
    `  check:    ${parked.check}`,
    `  then:     docs-admin resolve ${workflowId} --job-id <id> | resend ${workflowId} | abandon ${workflowId} [--reason <text>]`,
    `  deadline: ${parked.deadline} (then it ends OutcomeUnknown)`,
  ];
}

export function scheduleText(view: ScheduleView): string {
  const lines = [
    `schedule ${view.scheduleId}${view.paused ? ' (paused)' : ''}`,
    `  action:   ${view.workflowType ?? '?'}${view.domain ? ` for ${view.domain}` : ''}`,
    ...(view.cron.length > 0
      ? [`  cron:     ${view.cron.join(' | ')}${view.timezone ? ` (${view.timezone})` : ''}`]
      : []),
    ...(view.every.length > 0 ? [`  every:    ${view.every.join(', ')}`] : []),
    `  overlap:  ${view.overlap}`,
    ...(view.note ? [`  note:     ${view.note}`] : []),
    `  next:     ${view.nextActionTimes.slice(0, 3).join(', ') || '-'}`,
    ...(view.numActionsTaken !== undefined ? [`  actions:  ${view.numActionsTaken} taken`] : []),
    ...view.recentActions.slice(-3).map((a) => `  recent:   ${a.scheduledAt} -> ${a.workflowId}`),
  ];
  return `${lines.join('\n')}\n`;
}

export function parkedText(jobs: ParkedAgentJob[]): string {
  if (jobs.length === 0) return 'no agent job waits for an operator\n';
  const lines = jobs.flatMap((job) => [
    `${job.workflowId}`,
    `  project:   ${job.projectId}`,
    `  unknown:   the ${job.unknown} call${job.jobId ? ` (for job ${job.jobId})` : ''}`,
    `  parked:    ${job.parkedAt}`,
    `  gives up:  ${job.givesUpAt} (then it ends OutcomeUnknown)`,
    `  check:     ${job.check}`,
    `  it took effect:  ${job.settle.resolve}`,
    `  it did not:      ${job.settle.resend}`,
    `  give it up:      ${job.settle.abandon}`,
  ]);
  return `${lines.join('\n')}\n`;
}

/** One line per Schedule of `schedule rekey`. */
export function rekeyText(result: RekeyResult): string {
  const held = result.keyIdsBefore.length ? `held ${result.keyIdsBefore.join(', ')}` : 'held no encrypted payload';
  switch (result.outcome) {
    case 'current':
      return `current   ${result.scheduleId} (${held})\n`;
    case 'rekeyed':
      return `rekeyed   ${result.scheduleId} (${held})\n`;
    case 'recreated':
      return `recreated ${result.scheduleId} (${held}, its memo too: recent actions start over)\n`;
    default:
      return `failed    ${result.scheduleId} (${held}): ${result.problem}\n`;
  }
}
