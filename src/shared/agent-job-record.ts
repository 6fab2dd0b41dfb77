// An agent job as the admin API reports it (docs/contract.md). It sits here, at the bottom, because
// agentJob's contract carries it (the result's fields, the sendMessage and resolve updates' answers);
// the API client's types (src/api/types.ts) re-export it.

export interface AgentJob {
  id: string;
  /** One of AgentJobStatus (src/api/types.ts), or an unknown value passed through as is. */
  status: string;
  source: { repository: string | null; ref: string | null };
  model: string | null;
  /** Pull request link; null while active, or when the agent changed nothing. */
  prLink: string | null;
  createdAt: string;
  archivedAt: string | null;
}
