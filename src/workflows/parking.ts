// Parking: an agent job whose create or message outcome is unknown waits for a person instead of
// failing. Why, and the three updates that settle it (resolve, resend, abandon; each validated before
// anything changes and safe to repeat): docs/runbook.md, "DocsAgentJobNeedsOperator".
import { type ApplicationFailure, condition, setHandler } from '@temporalio/workflow';
import type { AgentJob } from '../api/types';
import { type ParkedCall, abandonUpdate, resendUpdate, resolveUpdate } from '../shared/agent-job';
import { ApiFailure, WorkflowFailure, failureType, nonRetryable } from '../shared/failures';
import { validateJobId } from '../policies/validation/agent';

export type Settlement =
  | { kind: 'resolved'; job: AgentJob }
  | { kind: 'resend' }
  | { kind: 'abandoned'; reason: string | null }
  | { kind: 'timed-out' };

export const MAX_REASON_LENGTH = 500;

function rejected(message: string): ApplicationFailure {
  return nonRetryable(WorkflowFailure.invalidInput, message);
}

export class Parking {
  parked: ParkedCall | null = null;
  /** The decision taken for the current parking (consumed by park()). */
  private pending: Settlement | null = null;
  /** The decision that ended the last parking: a repeat of the same update is a no-op success. */
  private last: Settlement | null = null;

  constructor(
    private readonly timeoutMs: number,
    private readonly onChange: () => void,
  ) {}

  /** The decision that stands for a repeated update: this parking's, or the last one's once unparked. */
  private standing(): Settlement | null {
    return this.pending ?? (this.parked ? null : this.last);
  }

  /** Waits for an operator's decision, or the time limit. */
  async park(call: Omit<ParkedCall, 'deadline' | 'check'>): Promise<{ settlement: Settlement; parked: ParkedCall }> {
    const check =
      call.operation === 'create'
        ? `the agent jobs of project ${call.projectId} created between ${call.from} and ${call.to} (and pull requests opened since)`
        : `whether agent job ${call.jobId} of project ${call.projectId} took a follow-up instruction between ${call.from} and ${call.to}`;
    const parked = { ...call, check, deadline: new Date(Date.now() + this.timeoutMs).toISOString() };
    this.parked = parked;
    this.pending = null;
    this.onChange();
    const settled = await condition(() => this.pending !== null, this.timeoutMs);
    const settlement: Settlement = (settled ? this.pending : null) ?? { kind: 'timed-out' };
    this.last = settlement;
    this.pending = null;
    this.parked = null;
    return { settlement, parked };
  }

  /** `fetchJob`: the job by id in this project (an API GET); throws NotFound when it does not exist. */
  register(fetchJob: (jobId: string) => Promise<AgentJob>): void {
    setHandler(resolveUpdate, ({ jobId }) => this.resolve(jobId, fetchJob), {
      validator: (arg: unknown) => {
        const jobId = (arg as { jobId?: unknown } | null)?.jobId;
        const problems = validateJobId(jobId);
        if (problems.length > 0) throw rejected(`invalid resolve: ${problems.join('; ')}`);
        this.checkResolvable(jobId as string);
      },
    });
    setHandler(resendUpdate, () => this.decide({ kind: 'resend' }), {
      validator: () => this.checkOpen('resend'),
    });
    setHandler(abandonUpdate, (arg) => this.decide({ kind: 'abandoned', reason: arg?.reason?.trim() || null }), {
      validator: (arg: unknown) => {
        const reason = (arg as { reason?: unknown } | null)?.reason;
        if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_REASON_LENGTH))
          throw rejected(`invalid abandon: reason must be text of at most ${MAX_REASON_LENGTH} characters`);
        this.checkOpen('abandoned');
      },
    });
  }

  private checkResolvable(jobId: string): void {
    const standing = this.standing();
    if (standing?.kind === 'resolved' && standing.job.id === jobId) return; // a repeat: no-op
    if (standing) throw rejected(`the job is no longer waiting for an operator (${describe(standing)})`);
    if (!this.parked) throw rejected('the job is not waiting for an operator');
    if (this.parked.operation === 'message' && jobId !== this.parked.jobId)
      throw rejected(`the parked message was for agent job ${this.parked.jobId}, not ${jobId}`);
  }

  /** resend and abandon: only while parked (or as a repeat of the same decision). */
  private checkOpen(kind: 'resend' | 'abandoned'): void {
    const standing = this.standing();
    if (standing?.kind === kind) return;
    if (standing) throw rejected(`the job is no longer waiting for an operator (${describe(standing)})`);
    if (!this.parked) throw rejected('the job is not waiting for an operator');
  }

  private decide(settlement: Settlement): void {
    if (this.parked && !this.pending) this.pending = settlement;
  }

  private async resolve(jobId: string, fetchJob: (jobId: string) => Promise<AgentJob>): Promise<AgentJob> {
    const projectId = this.parked?.projectId;
    let job: AgentJob;
    try {
      const standing = this.standing();
      job = standing?.kind === 'resolved' ? standing.job : await fetchJob(jobId);
    } catch (err) {
      if (failureType(err) === ApiFailure.notFound)
        throw rejected(`there is no agent job ${jobId} in project ${projectId}: nothing was changed`);
      throw err;
    }
    // Another update may have settled it while the job was being fetched.
    this.checkResolvable(jobId);
    this.decide({ kind: 'resolved', job });
    return job;
  }
}

function describe(settlement: Settlement): string {
  switch (settlement.kind) {
    case 'resolved':
      return `resolved with job ${settlement.job.id}`;
    case 'resend':
      return 'sent again';
    case 'abandoned':
      return 'abandoned';
    case 'timed-out':
      return 'its time limit passed';
  }
}

/** The Web UI's lines for a parked call (no prompt: details are stored in history). */
export function parkedDetails(parked: ParkedCall, workflowId: string): string[] {
  return [
    `- **Needs an operator**: the outcome of ${parked.operation === 'create' ? 'creating the agent job' : `a follow-up message to job \`${parked.jobId}\``} is unknown (the call may have reached the API)`,
    `- The call was made between ${parked.from} and ${parked.to}`,
    `- Check in the platform's dashboard: ${parked.check}`,
    `- Then: \`docs-admin resolve ${workflowId} --job-id <id>\` if it took effect, \`docs-admin resend ${workflowId}\` if not, or \`docs-admin abandon ${workflowId} --reason <text>\``,
    `- Ends with OutcomeUnknown at ${parked.deadline} unless settled`,
  ];
}

/** The failure a parked job ends with when abandoned or out of time. */
export function parkedFailure(call: ParkedCall, settlement: Settlement, cause?: Error): ApplicationFailure {
  const why =
    settlement.kind === 'abandoned'
      ? `abandoned by an operator${settlement.reason ? `: ${settlement.reason}` : ''}`
      : `nobody settled it by ${call.deadline}`;
  return nonRetryable(
    ApiFailure.outcomeUnknown,
    `the outcome of ${call.operation === 'create' ? 'creating the agent job' : `the follow-up message to agent job ${call.jobId}`} ` +
      `is unknown (project "${call.projectId}"${call.requestId ? `, request id "${call.requestId}"` : ''}, call made between ${call.from} and ${call.to}); ${why}. ` +
      `Check ${call.check} before starting it again`,
    cause ? { cause } : {},
  );
}
