// Small helpers for the Web UI's current details (Markdown) and for failures seen from workflow code.
// Deterministic: no I/O.
import { ActivityFailure, ApplicationFailure, ChildWorkflowFailure } from '@temporalio/workflow';

/** ISO string of a workflow-time instant, or a dash. */
export function iso(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '—' : new Date(ms).toISOString();
}

/** A link safe to show: no query string (a presigned link's signature lives there). */
export function linkForDisplay(url: string | null | undefined): string {
  if (!url) return '—';
  const cut = url.search(/[?#]/);
  return cut === -1 ? url : `${url.slice(0, cut)}?…`;
}

/** A two-column Markdown table under a heading. Cells are escaped for pipes and newlines. */
export function markdownTable(title: string, rows: [string, string | number | boolean | null | undefined][]): string {
  const cell = (v: string | number | boolean | null | undefined) =>
    v === null || v === undefined || v === '' ? '—' : String(v).replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
  return [`**${title}**`, '', '| | |', '|---|---|', ...rows.map(([k, v]) => `| ${k} | ${cell(v)} |`)].join('\n');
}

/** The innermost ApplicationFailure of an activity or child workflow failure (or the error itself). */
export function rootApplicationFailure(err: unknown): ApplicationFailure | undefined {
  let cur: unknown = err;
  for (let depth = 0; depth < 6 && cur; depth++) {
    if (cur instanceof ApplicationFailure) return cur;
    if (cur instanceof ActivityFailure || cur instanceof ChildWorkflowFailure) cur = cur.cause;
    else return undefined;
  }
  return undefined;
}

/** Type of the innermost ApplicationFailure, e.g. PlanRequired or ExportFailed. */
export function failureType(err: unknown): string | undefined {
  return rootApplicationFailure(err)?.type ?? undefined;
}

/** A one-line reason for a failure, from the innermost ApplicationFailure when there is one. */
export function failureMessage(err: unknown): string {
  const root = rootApplicationFailure(err);
  if (root) return `${root.type ?? 'Error'}: ${root.message}`;
  return err instanceof Error ? err.message : String(err);
}
