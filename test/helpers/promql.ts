// The metric names a PromQL expression selects (enough of PromQL for the project's dashboard and rules):
// strings, label matchers, ranges and by/without/on/ignoring/group_* label lists are dropped; what is
// left that is not a function call, keyword or number is a metric name. Recording rules (a colon) are
// not metrics a worker exports, and are left out.
const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
  'and',
  'or',
  'unless',
  'inf',
  'nan',
]);

export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const m of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*(?=\s*(\(?))/g)) {
    const name = m[0];
    if (m[1] === '(' || KEYWORDS.has(name.toLowerCase()) || name.includes(':') || name.startsWith('$')) continue;
    names.add(name);
  }
  return [...names];
}
