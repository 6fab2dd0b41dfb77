// Small helpers for the Web UI's current details (Markdown). Deterministic: no I/O. Failures are read
// with src/shared/failures.ts.

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
