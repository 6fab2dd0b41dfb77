// An agent job as the admin API reports it (docs/contract.md). It sits here, at the bottom, because
// agentJob's contract carries it (the result's fields, the sendMessage and resolve updates' answers);
// the API client's types (src/api/types.ts) re-export it.
import { id, nullable, record, text, type Shaped } from './shapes';

const nullableText = nullable(text);

export const agentJobRecord = record({
  id,
  /** One of AgentJobStatus (src/api/types.ts), or an unknown value passed through as is. */
  status: text,
  source: record({ repository: nullableText, ref: nullableText }),
  model: nullableText,
  /** Pull request link; null while active, or when the agent changed nothing. */
  prLink: nullableText,
  createdAt: text,
  archivedAt: nullableText,
});
export type AgentJob = Shaped<typeof agentJobRecord>;
