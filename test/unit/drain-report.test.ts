// test-lane: parallel
// The drain benchmark's verdicts (bench/run.ts): which targets decide the overall result.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RateLimitDrainFigures } from '../../bench/rate-limit-drain';
import { drainRunTargets, renderDrainMarkdown, renderDrainSvg } from '../../bench/run';

function figures(windowMs: number, drainMs: number): RateLimitDrainFigures {
  const theoreticalMinMs = 2 * windowMs + 1_000;
  // 100 creates per window, 16 ms apart, the first at 1.1 s; each job done 1.4 s after its create.
  const createMs = Array.from(
    { length: 300 },
    (_, k) => 1_100 + Math.floor(k / 100) * (windowMs + 250) + (k % 100) * 16,
  );
  return {
    jobs: 300,
    otherJobs: 10,
    limit: 100,
    windowMs,
    marginMs: 250,
    agentActiveMs: 1_000,
    completed: 310,
    failed: 0,
    createCalls: 310,
    rateLimited: 0,
    rateLimitedShare: 0,
    drainMs,
    theoreticalMinMs,
    drainRatio: Math.round((drainMs / theoreticalMinMs) * 1000) / 1000,
    lastCreateMs: drainMs - 1_400,
    secondWindowCreateMs: windowMs + 1_200,
    firstWindowCreateMs: [1_100, 2_700],
    burst: { createMs, completionMs: createMs.map((t) => t + 1_400) },
    burstProject: 'drain-burst-test',
    limiter: { workflowTasks: 150, events: 1_000, runs: 1, stickyTimeouts: 0, failedTasks: 0, lostGrants: 0 },
    other: { createMs: [2_000], completionMs: [4_000], maxCreateMs: 2_000, maxCompletionMs: 4_000 },
  };
}

const ratioOf = (windowS: number) => (t: { name: string }) =>
  t.name === `drain / theoretical minimum (${windowS} s window)`;

test('the drain ratio is gated on the longest window only; a shorter window reports its miss', () => {
  const runs = [figures(10_000, 24_700), figures(60_000, 126_000)];
  const targets = drainRunTargets(runs);
  const short = targets.find(ratioOf(10))!;
  const long = targets.find(ratioOf(60))!;
  assert.equal(short.pass, false);
  assert.equal(short.gated, false);
  assert.equal(long.pass, true);
  assert.equal(long.gated, true);
  // Every other target is gated for every window.
  assert.ok(targets.filter((t) => !t.name.startsWith('drain /')).every((t) => t.gated !== false));

  const markdown = renderDrainMarkdown(runs);
  assert.match(
    markdown,
    /\| drain \/ theoretical minimum \(10 s window\) \| 1\.18 \| <= 1\.10 \| missed \(not gated\) \|/,
  );
  assert.match(markdown, /\| drain \/ theoretical minimum \(60 s window\) \| 1\.04 \| <= 1\.10 \| PASS \|/);
  // Overhead column: drain minus the theoretical minimum.
  assert.match(markdown, /\| 10\.0 \| 300 \+ 10 \| 310 \| 310 \| 0 \| 24\.7 \| 21\.0 \| 1\.18 \| 3\.7 \|/);
});

test('a miss on the longest window fails the drain', () => {
  const targets = drainRunTargets([figures(10_000, 22_000), figures(60_000, 140_000)]);
  const long = targets.find(ratioOf(60))!;
  assert.equal(long.pass, false);
  assert.equal(long.gated, true);
  assert.equal(targets.find(ratioOf(10))!.pass, true);
});

test('a single run gates its own ratio', () => {
  const [, ratio] = drainRunTargets([figures(10_000, 24_700)]);
  assert.equal(ratio!.gated, true);
  assert.equal(ratio!.pass, false);
});

test('the drain chart: one panel per run, the API allowance dashed, creates and completions up to every job', () => {
  const runs = [figures(10_000, 24_700), figures(60_000, 126_000)];
  const svg = renderDrainSvg(runs);
  assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.equal((svg.match(/<path /g) ?? []).length, 8, 'four lines per run');
  assert.equal((svg.match(/stroke-dasharray/g) ?? []).length, 2, 'one allowance line per run');
  assert.match(svg, /10 s window: drain 24\.7 s, 1\.18x the minimum, 0 answers of 429/);
  assert.match(svg, /60 s window: drain 126\.0 s, 1\.04x the minimum/);
  // The created line ends at every job (its last point is the top of the chart: 300 jobs of 300).
  const paths = [...svg.matchAll(/<path d="([^"]+)"/g)].map((m) => m[1]!);
  const lastY = (d: string) => Number(d.trim().split(' ').pop()!.split(',')[1]);
  assert.equal(lastY(paths[1]!), lastY(paths[0]!), 'creates reach the allowance at the end: 300');
});
