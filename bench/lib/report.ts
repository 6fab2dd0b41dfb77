// Renders a PollingReport as a console table, Markdown and a hand-made SVG bar chart.
import type { PollingReport } from './polling-report';

const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const sec = (ms: number): string => `${fmt(ms / 1000)} s`;
/** Lag p50 / p99 over the runs of 1 h or more, in seconds ('n/a' when there are none). */
const longLags = (p: PollingReport['scenarios'][number]['policies'][number]): string =>
  p.longLagP50Ms === null || p.longLagP99Ms === null
    ? 'n/a'
    : `${fmt(p.longLagP50Ms / 1000)} / ${fmt(p.longLagP99Ms / 1000)}`;

/** Which jobs every policy of the scenario ran against. */
const jobsLine = (s: PollingReport['scenarios'][number]): string =>
  `Jobs: ${s.jobs.count}, of which ${s.jobs.queued} queued first (${fmt(s.jobs.queuedMinMs / 1000)} s..${fmt(s.jobs.queuedMaxMs / 1000)} s) and ${s.jobs.long} run 1 h or more; every policy runs against the same jobs.`;

export function renderText(report: PollingReport): string {
  const out: string[] = [`Polling efficiency: ${report.jobs} jobs per scenario, seed ${report.seed}`];
  for (const s of report.scenarios) {
    out.push('', `## ${s.name}: ${s.description}`, jobsLine(s));
    const rows = [
      ['policy', 'calls/job mean', 'calls/job p99', 'lag p50', 'lag p99', 'lag p99 queued', 'lag p50/p99 >= 1 h (s)'],
    ];
    for (const p of s.policies) {
      rows.push([
        p.name,
        fmt(p.callsMean),
        fmt(p.callsP99, 0),
        sec(p.lagP50Ms),
        sec(p.lagP99Ms),
        sec(p.queuedLagP99Ms),
        longLags(p),
      ]);
    }
    const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
    for (const r of rows)
      out.push(r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  '));
    for (const t of s.targets)
      out.push(`${t.pass ? 'PASS' : 'FAIL'}  ${t.description}: ${fmt(t.value, 2)} (limit ${fmt(t.limit, 2)})`);
  }
  out.push('', report.pass ? 'All targets met.' : 'Some targets FAILED.');
  return out.join('\n');
}

export function renderMarkdown(report: PollingReport): string {
  const out: string[] = [
    '# Polling efficiency',
    '',
    `Deterministic simulation (\`bench/polling-sim.ts\`), ${report.jobs} jobs per scenario, seed ${report.seed}.`,
    'Calls are status GETs after the start call; lag is from completion to the poll that sees it.',
  ];
  for (const s of report.scenarios) {
    out.push(
      '',
      `## ${s.name}`,
      '',
      s.description,
      jobsLine(s),
      '',
      '| policy | calls/job mean | calls/job p99 | lag p50 (s) | lag p99 (s) | lag p99, queued jobs (s) | lag p50 / p99, runs >= 1 h (s) |',
      '|---|---:|---:|---:|---:|---:|---:|',
    );
    for (const p of s.policies) {
      const name = p.ours ? `**${p.name}**` : p.name;
      out.push(
        `| ${name} | ${fmt(p.callsMean)} | ${fmt(p.callsP99, 0)} | ${fmt(p.lagP50Ms / 1000)} | ${fmt(p.lagP99Ms / 1000)} | ${fmt(p.queuedLagP99Ms / 1000)} | ${longLags(p)} |`,
      );
    }
    out.push('', '| target | value | limit | result |', '|---|---:|---:|---|');
    for (const t of s.targets)
      out.push(`| ${t.description} | ${fmt(t.value, 2)} | ${fmt(t.limit, 2)} | ${t.pass ? 'PASS' : 'FAIL'} |`);
  }
  out.push('');
  return out.join('\n');
}

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Two panels per scenario (calls per job, p99 lag), one horizontal bar per policy. */
export function renderSvg(report: PollingReport): string {
  const labelW = 130;
  const barW = 260;
  const panelW = labelW + barW + 70;
  const rowH = 20;
  const gap = 40;
  const parts: string[] = [];
  let y = 46;
  const title = `Polling efficiency (${report.jobs} jobs/scenario, seed ${report.seed})`;
  for (const s of report.scenarios) {
    const verdict = s.targets.map(
      (t) => `${t.description} ${fmt(t.value, 2)} <= ${fmt(t.limit, 2)} ${t.pass ? 'PASS' : 'FAIL'}`,
    );
    parts.push(
      `<text x="10" y="${y}"><tspan font-weight="bold">${esc(s.name)}</tspan><tspan font-size="11" fill="${s.pass ? '#2b8a3e' : '#c92a2a'}" dx="10">${esc(verdict.join('; '))}</tspan></text>`,
    );
    y += 10;
    const panels: { title: string; value: (p: (typeof s.policies)[number]) => number; unit: string }[] = [
      { title: 'status calls per job (mean)', value: (p) => p.callsMean, unit: '' },
      { title: 'detection lag p99 (s)', value: (p) => p.lagP99Ms / 1000, unit: ' s' },
    ];
    panels.forEach((panel, k) => {
      const x0 = 10 + k * panelW;
      const max = Math.max(1e-9, ...s.policies.map(panel.value));
      parts.push(`<text x="${x0}" y="${y + 14}" font-size="12" fill="#444">${esc(panel.title)}</text>`);
      s.policies.forEach((p, i) => {
        const yy = y + 22 + i * rowH;
        const v = panel.value(p);
        const w = Math.max(1, (v / max) * barW);
        const fill = p.ours ? '#d9480f' : '#4c6ef5';
        parts.push(
          `<text x="${x0 + labelW - 6}" y="${yy + 13}" font-size="12" text-anchor="end">${esc(p.name)}</text>`,
          `<rect x="${x0 + labelW}" y="${yy + 2}" width="${w.toFixed(1)}" height="${rowH - 6}" fill="${fill}"/>`,
          `<text x="${x0 + labelW + w + 4}" y="${yy + 13}" font-size="11">${fmt(v)}${panel.unit}</text>`,
        );
      });
    });
    y += 22 + s.policies.length * rowH + gap;
  }
  const width = 20 + 2 * panelW;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y}" viewBox="0 0 ${width} ${y}" font-family="sans-serif" font-size="13">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="10" y="16" font-size="14">${esc(title)}</text>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}
