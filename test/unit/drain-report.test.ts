// The drain benchmark's verdicts (bench/run.ts): which targets decide the overall result.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RateLimitDrainFigures } from '../../bench/rate-limit-drain';
import { drainRunTargets, renderDrainMarkdown } from '../../bench/run';

function figures(windowMs: number, drainMs: number): RateLimitDrainFigures {
  const theoreticalMinMs = 2 * windowMs + 1_000;
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
    other: { createMs: [2_000], completionMs: [4_000], maxCreateMs: 2_000, maxCompletionMs: 4_000 },
  };
}

const ratioOf = (windowS: number) => (t: { name: string }) => t.name === `drain / theoretical minimum (${windowS} s window)`;

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
  assert.match(markdown, /\| drain \/ theoretical minimum \(10 s window\) \| 1\.18 \| <= 1\.10 \| missed \(not gated\) \|/);
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
