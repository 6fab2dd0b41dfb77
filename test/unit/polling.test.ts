// test-lane: parallel
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_AGENT_POLL_OPTIONS as A,
  DEFAULT_EXPORT_POLL_OPTIONS as E,
  type Observation,
  agentPollDelay,
  exportPollDelay,
  maxObservationsNeeded,
  recentObservations,
} from '../../src/workflows/polling';

const S = 1_000;
const noJitter = { jitter: 0 } as const;

/** Drives a policy like a workflow would: poll, record, ask for the next delay. Returns the delays. */
function drive(
  policy: (obs: readonly Observation[], now: number) => number,
  statusAt: (t: number) => Omit<Observation, 'atMs'>,
  untilMs: number,
  keep = Infinity,
): { delays: number[]; history: Observation[] } {
  const history: Observation[] = [{ atMs: 0, ...statusAt(0) }];
  const delays: number[] = [];
  let now = 0;
  while (now < untilMs) {
    const view = keep === Infinity ? history : history.slice(-keep);
    const d = policy(view, now);
    delays.push(d);
    now += d;
    history.push({ atMs: now, ...statusAt(now) });
  }
  return { delays, history };
}

/** Linear progress from 0 at t = 0 to 100 at `durationMs`, reported as whole percentages. */
const linear =
  (durationMs: number) =>
  (t: number): Omit<Observation, 'atMs'> =>
    t >= durationMs
      ? { status: 'completed', progress: 100 }
      : { status: 'running', progress: Math.floor((100 * t) / durationMs) };

/**
 * Steady progress that reads 100 at (1 - finishShare) of `runMs`, then 100 (at most `top`) while the last
 * pages are packaged, until it completes at `doneMs`; `decimals` digits after the point.
 */
const finishing =
  ({ runMs, finishShare, doneMs, decimals = 0, top = 100 }: FinishingJob) =>
  (t: number): Omit<Observation, 'atMs'> => {
    if (t >= doneMs) return { status: 'completed', progress: 100 };
    const scale = 10 ** decimals;
    const progress = Math.floor((100 * scale * t) / (runMs * (1 - finishShare))) / scale;
    return { status: 'running', progress: Math.min(top, progress) };
  };
interface FinishingJob {
  runMs: number;
  finishShare: number;
  doneMs: number;
  decimals?: number;
  top?: number;
}

/** The waits chosen after a poll that saw a running job at (or just below) 100 %. */
const waitsAtTheEnd = (delays: readonly number[], history: readonly Observation[]): number[] =>
  delays.filter((_, i) => history[i]!.status === 'running' && history[i]!.progress! >= E.finishedProgress);

function inBounds(d: number, floor: number, ceiling: number): void {
  assert.ok(Number.isFinite(d), `delay ${d} is finite`);
  assert.ok(d >= floor && d <= ceiling, `delay ${d} within [${floor}, ${ceiling}]`);
}

describe('exportPollDelay', () => {
  test('linear progress: the poll before completion lands near the predicted completion', () => {
    const duration = 600 * S;
    const obs: Observation[] = [];
    for (let t = 0; t <= 580 * S; t += 10 * S) obs.push({ atMs: t, status: 'running', progress: (100 * t) / duration });
    const now = 580 * S;
    const d = exportPollDelay(obs, now, noJitter);
    assert.ok(Math.abs(now + d - duration) <= 10 * S, `next poll at ${(now + d) / S} s, completion at 600 s`);
  });

  test('linear progress: far from completion waits long (up to the ceiling), never beyond', () => {
    const obs: Observation[] = [
      { atMs: 0, status: 'running', progress: 0 },
      { atMs: 60 * S, status: 'running', progress: 1 },
      { atMs: 120 * S, status: 'running', progress: 2 },
    ];
    // About 98 minutes to go: the ceiling.
    assert.equal(exportPollDelay(obs, 120 * S, noJitter), E.ceilingMs);
    for (const jitter of [0, 0.1, 0.5, 1]) inBounds(exportPollDelay(obs, 120 * S, { jitter }), E.floorMs, E.ceilingMs);
  });

  test('linear jobs of many lengths: every delay within floor and ceiling, completion seen soon after', () => {
    for (const duration of [15 * S, 90 * S, 20 * 60 * S, 3 * 3600 * S]) {
      const { delays, history } = drive(
        (o, n) => exportPollDelay(o, n),
        linear(duration),
        duration,
        maxObservationsNeeded,
      );
      for (const d of delays) inBounds(d, E.floorMs, E.ceilingMs);
      const lag = history[history.length - 1]!.atMs - duration;
      assert.ok(lag >= 0 && lag <= 15 * S, `duration ${duration / S} s: lag ${lag / S} s`);
      // Far fewer calls than a fixed 10 s interval for long jobs.
      if (duration >= 20 * 60 * S) assert.ok(delays.length < duration / (10 * S) / 4, `${delays.length} calls`);
    }
  });

  test('stalled at 99: backs off to the ceiling but keeps polling; no division by zero', () => {
    const status = (t: number): Omit<Observation, 'atMs'> =>
      t < 300 * S ? { status: 'running', progress: Math.floor(t / (3 * S)) } : { status: 'running', progress: 99 };
    const { delays } = drive((o, n) => exportPollDelay(o, n, noJitter), status, 2 * 3600 * S, maxObservationsNeeded);
    for (const d of delays) inBounds(d, E.floorMs, E.ceilingMs);
    const tail = delays.slice(-20);
    assert.ok(
      tail.every((d) => d >= 0.9 * E.overdueCeilingMs),
      `late delays near the overdue ceiling: ${tail.join(',')}`,
    );
    // Polls keep coming (about one per ceiling interval), not one per floor interval.
    assert.ok(delays.length < (2 * 3600 * S) / E.overdueCeilingMs + 60, `${delays.length} polls`);
  });

  test('progress 100 while still running: finishing, polls again soon', () => {
    const obs: Observation[] = [
      { atMs: 0, status: 'running', progress: 90 },
      { atMs: 10 * S, status: 'running', progress: 100 },
    ];
    const d = exportPollDelay(obs, 10 * S, noJitter);
    inBounds(d, E.floorMs, 10 * S);
  });

  test('at 100 % (or 99.9) before completing: the waits shrink, never grow, and the end is found soon', () => {
    const jobs: FinishingJob[] = [
      { runMs: 3600 * S, finishShare: 0.01, doneMs: 3600 * S },
      { runMs: 3 * 3600 * S, finishShare: 0.02, doneMs: 3 * 3600 * S, decimals: 1 },
      // An API that never says 100 while running (like the emulator): it sits at 99.9.
      { runMs: 2 * 3600 * S, finishShare: 0.015, doneMs: 2 * 3600 * S, decimals: 1, top: 99.9 },
    ];
    for (const job of jobs) {
      const { delays, history } = drive((o, n) => exportPollDelay(o, n, noJitter), finishing(job), job.doneMs);
      const waits = waitsAtTheEnd(delays, history);
      assert.ok(waits.length >= 3, `${job.runMs / S} s: ${waits.length} polls at the end`);
      waits.forEach((w, i) => {
        inBounds(w, E.floorMs, E.finishingCeilingMs);
        if (i > 0) assert.ok(w <= waits[i - 1]!, `${job.runMs / S} s: waits at the end ${waits.join(', ')}`);
      });
      const lag = history[history.length - 1]!.atMs - job.doneMs;
      assert.ok(lag >= 0 && lag <= E.finishingCeilingMs, `${job.runMs / S} s: lag ${lag / S} s`);
    }
  });

  test('stuck at 100 % far longer than its pace predicts: backs off like a stall', () => {
    const job = { runMs: 3600 * S, finishShare: 0.02, doneMs: 3 * 3600 * S };
    const { delays, history } = drive((o, n) => exportPollDelay(o, n), finishing(job), job.doneMs);
    const waits = waitsAtTheEnd(delays, history);
    // First the finishing stretch (3 % of the run at its pace: about 110 s) in short waits ...
    for (const w of waits.slice(0, 5)) inBounds(w, E.floorMs, E.finishingCeilingMs);
    // ... then the stall backoff: the last hour polled about once per overdue ceiling.
    const tail = waits.slice(-20);
    assert.ok(
      tail.every((w) => w >= 0.9 * E.overdueCeilingMs),
      `late waits near the overdue ceiling: ${tail.join(',')}`,
    );
    const atTheEnd = job.doneMs - job.runMs * (1 - job.finishShare);
    assert.ok(waits.length < atTheEnd / E.overdueCeilingMs + 30, `${waits.length} polls in ${atTheEnd / S} s at 100 %`);
  });

  test('progress that rose by many steps between two polls predicts from its pace, whole or one decimal', () => {
    // 15 s job, one poll after 2 s: 13.3 % (13 %) is 2 s of work, so the end is about 13 s away. (Taken as
    // reached halfway through the interval, it looked twice as fast: 5.5 s away, and more polls followed.)
    for (const progress of [13.3, 13]) {
      const obs: Observation[] = [
        { atMs: 0, status: 'running', progress: 0 },
        { atMs: 2 * S, status: 'running', progress },
      ];
      const next = 2 * S + exportPollDelay(obs, 2 * S, noJitter);
      assert.ok(next >= 13 * S && next <= 15.5 * S, `${progress} %: next poll at ${next / S} s`);
    }
  });

  test('jump 0 -> 80 in one poll: predicts completion soon, stays within bounds', () => {
    const obs: Observation[] = [
      { atMs: 0, status: 'running', progress: 0 },
      { atMs: 30 * S, status: 'running', progress: 0 },
      { atMs: 60 * S, status: 'running', progress: 80 },
    ];
    const d = exportPollDelay(obs, 60 * S, noJitter);
    inBounds(d, E.floorMs, 30 * S);
    // And if it then sits at 80, the policy backs off instead of hammering.
    const later = [
      ...obs,
      { atMs: 90 * S, status: 'running', progress: 80 },
      { atMs: 300 * S, status: 'running', progress: 80 },
    ];
    assert.ok(exportPollDelay(later, 300 * S, noJitter) > d);
  });

  test('queued: backoff grows from the floor to the queued cap, then relaxes to the ceiling in a long queue', () => {
    const { delays, history } = drive(
      (o, n) => exportPollDelay(o, n, noJitter),
      () => ({ status: 'queued', progress: 0 }),
      3600 * S,
    );
    assert.equal(delays[0], E.floorMs);
    for (let i = 1; i < delays.length; i++) assert.ok(delays[i]! >= delays[i - 1]!, 'non-decreasing');
    // The low cap holds until the long-queue relaxation passes it, then the ceiling is reached.
    const relaxFromMs = E.queuedCeilingMs / E.longQueueFraction;
    history.slice(0, -1).forEach((o, i) => {
      if (o.atMs < relaxFromMs) assert.ok(delays[i]! <= E.queuedCeilingMs, `${delays[i]} at ${o.atMs / S} s queued`);
    });
    assert.ok(delays.includes(E.queuedCeilingMs), 'the queued cap is reached');
    assert.equal(Math.max(...delays), E.ceilingMs);
  });

  test('queued: no wait ever exceeds the queued cap, or the share of the time queued past it (any jitter)', () => {
    for (const jitter of [0, 0.1, 0.5, 1]) {
      for (const u of [0, 0.5, 0.999]) {
        const { delays, history } = drive(
          (o, n) => exportPollDelay(o, n, { jitter, random: () => u }),
          () => ({ status: 'queued', progress: 0 }),
          2 * 3600 * S,
          maxObservationsNeeded,
        );
        history.slice(0, -1).forEach((o, i) => {
          const bound = Math.round(Math.min(E.ceilingMs, Math.max(E.queuedCeilingMs, E.longQueueFraction * o.atMs)));
          assert.ok(
            delays[i]! >= E.floorMs && delays[i]! <= bound,
            `jitter ${jitter}, u ${u}: ${delays[i]} at ${o.atMs / S} s`,
          );
        });
      }
    }
  });

  test('queued, then a short run: found at most the queued cap minus its running time after it finished', () => {
    // The job starts while we wait; if it also finishes within that wait, we see it at the next poll.
    // Queued for 1 s to 4 min: below queuedCeilingMs / longQueueFraction, where the cap starts to relax.
    assert.ok(240 * S <= E.queuedCeilingMs / E.longQueueFraction);
    for (const runMs of [5 * S, 10 * S, 15 * S]) {
      let worst = 0;
      for (let queuedMs = 1 * S; queuedMs <= 240 * S; queuedMs += 997) {
        const statusAt = (t: number): Omit<Observation, 'atMs'> =>
          t < queuedMs
            ? { status: 'queued', progress: 0 }
            : t >= queuedMs + runMs
              ? { status: 'completed', progress: 100 }
              : { status: 'running', progress: Math.floor((100 * (t - queuedMs)) / runMs) };
        const { history } = drive((o, n) => exportPollDelay(o, n), statusAt, queuedMs + runMs, maxObservationsNeeded);
        worst = Math.max(worst, history[history.length - 1]!.atMs - (queuedMs + runMs));
      }
      // The design's bound (a 25 s cap: a 10 s export found at most 15 s late), not just the option's.
      const bound = Math.min(E.queuedCeilingMs, 25 * S) - runMs;
      assert.ok(worst <= bound, `run ${runMs / S} s: worst lag ${worst / S} s > ${bound / S} s`);
    }
  });

  test('queued: a few minutes cost a handful of calls, an hour far fewer than the queued cap would allow', () => {
    const calls = (queuedMs: number): number =>
      drive(
        (o, n) => exportPollDelay(o, n),
        () => ({ status: 'queued', progress: 0 }),
        queuedMs,
        maxObservationsNeeded,
      ).delays.length;
    // The ramp (5 calls to reach 25 s) and then one call per 25 s: 11 or 12 for 3 minutes.
    assert.ok(calls(180 * S) <= 12, `${calls(180 * S)} calls in 3 min`);
    // An hour: about one call a minute once relaxed (73), against 3600 / 25 = 144 at a flat 25 s cap.
    assert.ok(calls(3600 * S) <= 80, `${calls(3600 * S)} calls in an hour`);
  });

  test('queued: deterministic, jitter from options.random when given; a re-queued job restarts the backoff', () => {
    const obs: Observation[] = [0, 4, 8].map((t) => ({ atMs: t * S, status: 'queued', progress: 0 }));
    assert.equal(exportPollDelay(obs, 8 * S), exportPollDelay(obs, 8 * S));
    const low = exportPollDelay(obs, 8 * S, { random: () => 0 });
    const high = exportPollDelay(obs, 8 * S, { random: () => 0.999 });
    assert.ok(low < 8 * S && high > 8 * S, `${low} < 8 s < ${high}`);
    const spread = new Set(Array.from({ length: 50 }, (_, i) => exportPollDelay(obs, 8 * S + i)));
    assert.ok(spread.size > 10, 'the default jitter varies with the input');
    // Queued again after running: the streak starts at the new queued observation.
    const requeued: Observation[] = [
      ...obs,
      { atMs: 90 * S, status: 'running', progress: 5 },
      { atMs: 92 * S, status: 'queued' },
    ];
    assert.equal(exportPollDelay(requeued, 92 * S, noJitter), E.floorMs);
  });

  test('queued: the cap and the long-queue relaxation are options', () => {
    const obs: Observation[] = [{ atMs: 0, status: 'queued' }];
    assert.equal(exportPollDelay(obs, 3600 * S, { ...noJitter, longQueueFraction: 0 }), E.queuedCeilingMs);
    assert.equal(exportPollDelay(obs, 100 * S, { ...noJitter, queuedCeilingMs: 10 * S }), 10 * S);
    // Never above the ceiling, whatever the queued options say.
    assert.equal(exportPollDelay(obs, 3600 * S, { ...noJitter, queuedCeilingMs: 600 * S, ceilingMs: 60 * S }), 60 * S);
  });

  test('non-monotonic or garbage progress: finite, within bounds', () => {
    const cases: unknown[][] = [
      [50, 60, 20, 30, 25],
      [10, 90, 5, 5, 5],
      [-5, 150, Number.NaN, Infinity, 40],
      [undefined, 10, undefined, 20],
      ['12', '30', '45'],
    ];
    for (const values of cases) {
      const obs = values.map((progress, i) => ({ atMs: i * 10 * S, status: 'running', progress }) as Observation);
      const now = (values.length - 1) * 10 * S;
      inBounds(exportPollDelay(obs, now), E.floorMs, E.ceilingMs);
    }
  });

  test('a drop in progress restarts the rate estimate instead of predicting a negative rate', () => {
    const obs: Observation[] = [0, 40, 80, 10, 20].map((progress, i) => ({
      atMs: i * 60 * S,
      status: 'running',
      progress,
    }));
    // After the reset: 10%/min from 10 to 20, so about 8 minutes to go: the ceiling, not overdue polling.
    assert.equal(exportPollDelay(obs, 240 * S, noJitter), E.ceilingMs);
  });

  test('missing progress: backs off with the time without news, up to the ceiling', () => {
    const { delays } = drive(
      (o, n) => exportPollDelay(o, n, noJitter),
      () => ({ status: 'running' }),
      3600 * S,
    );
    assert.equal(delays[0], E.floorMs);
    for (let i = 1; i < delays.length; i++) assert.ok(delays[i]! >= delays[i - 1]!);
    assert.equal(delays[delays.length - 1], E.ceilingMs);
  });

  test('unknown status counts as running', () => {
    const mk = (status: string): Observation[] =>
      [0, 10, 20, 30].map((progress, i) => ({ atMs: i * 30 * S, status, progress }));
    assert.equal(exportPollDelay(mk('exporting'), 90 * S), exportPollDelay(mk('running'), 90 * S));
    assert.equal(exportPollDelay(mk('RUNNING'), 90 * S), exportPollDelay(mk('running'), 90 * S));
  });

  test('empty history: the floor', () => {
    assert.equal(exportPollDelay([], 0, noJitter), E.floorMs);
  });

  test('truncated history: the recent suffix gives the same answer as the full history', () => {
    for (const duration of [3600 * S, 3 * 3600 * S]) {
      const { history } = drive((o, n) => exportPollDelay(o, n), linear(duration), duration * 0.7);
      assert.ok(history.length > maxObservationsNeeded);
      const now = history[history.length - 1]!.atMs;
      assert.equal(exportPollDelay(recentObservations(history), now), exportPollDelay(history, now));
      assert.equal(exportPollDelay(history.slice(-maxObservationsNeeded), now), exportPollDelay(history, now));
    }
  });

  test('recentObservations: a run of polls at one value keeps its first and last; poll by poll = at once', () => {
    const job = { runMs: 3600 * S, finishShare: 0.02, doneMs: 2 * 3600 * S };
    const { history } = drive((o, n) => exportPollDelay(o, n), finishing(job), job.doneMs - 60 * S);
    let carried: Observation[] = [];
    for (const x of history) carried = recentObservations([...carried, x]);
    assert.deepEqual(carried, recentObservations(history));
    assert.ok(carried.length <= maxObservationsNeeded);
    // An hour at 100 % is two observations: the progress before it, which the pace comes from, is kept.
    const at100 = carried.filter((x) => x.status === 'running' && x.progress === 100);
    assert.equal(at100.length, 2);
    assert.ok(carried.filter((x) => x.progress! < 100).length >= 6, 'the pace before 100 % is kept');
    assert.ok(at100[0]!.atMs < job.runMs && at100[1]!.atMs >= job.doneMs - 60 * S);
  });

  test('a suffix that starts mid-run (first element is not the creation) still predicts', () => {
    const obs: Observation[] = [40, 45, 50].map((progress, i) => ({
      atMs: 1_000 * S + i * 30 * S,
      status: 'running',
      progress,
    }));
    // 1 %/6 s, 300 s to go: the ceiling.
    assert.equal(exportPollDelay(obs, 1_060 * S, noJitter), E.ceilingMs);
    // One point only: no rate yet, a short wait.
    inBounds(exportPollDelay(obs.slice(-1), 1_060 * S, noJitter), E.floorMs, E.floorMs);
  });

  test('deterministic: same input, same output; jitter comes from options.random when given', () => {
    const obs: Observation[] = [0, 10, 20].map((progress, i) => ({ atMs: i * 60 * S, status: 'running', progress }));
    assert.equal(exportPollDelay(obs, 120 * S), exportPollDelay(obs, 120 * S));
    const low = exportPollDelay(obs, 120 * S, { random: () => 0, ceilingMs: 1e9 });
    const high = exportPollDelay(obs, 120 * S, { random: () => 0.999, ceilingMs: 1e9 });
    assert.ok(low < high, `${low} < ${high}`);
    const spread = new Set(Array.from({ length: 50 }, (_, i) => exportPollDelay(obs, 120 * S + i, { ceilingMs: 1e9 })));
    assert.ok(spread.size > 10, 'the default jitter varies with the input');
  });

  test('respects options: floor and ceiling', () => {
    const obs: Observation[] = [0, 1].map((progress, i) => ({ atMs: i * 60 * S, status: 'running', progress }));
    assert.equal(exportPollDelay(obs, 60 * S, { ceilingMs: 15 * S, jitter: 0 }), 15 * S);
    assert.equal(exportPollDelay([{ atMs: 0, status: 'queued' }], 0, { floorMs: 5 * S, jitter: 0 }), 5 * S);
  });
});

describe('agentPollDelay', () => {
  test('grows with elapsed time from the floor to the cap', () => {
    const first: Observation = { atMs: 0, status: 'active' };
    assert.equal(agentPollDelay([first], 0, noJitter), A.floorMs);
    const d20 = agentPollDelay([first], 20 * S, noJitter);
    const d40 = agentPollDelay([first], 40 * S, noJitter);
    assert.ok(d20 < d40 && d40 <= A.capMs, `${d20} < ${d40} <= cap`);
    assert.equal(agentPollDelay([first], 3600 * S, noJitter), A.capMs);
    for (let t = 0; t < 3600 * S; t += 7 * S) inBounds(agentPollDelay([first], t), A.floorMs, A.capMs);
  });

  test('calls grow slowly while the cap bounds the lag', () => {
    const calls = (durationMs: number): number => {
      const { delays } = drive(
        (o, n) => agentPollDelay(o, n),
        (t) => ({ status: t >= durationMs ? 'completed' : 'active' }),
        durationMs,
        maxObservationsNeeded,
      );
      return delays.length;
    };
    assert.ok(calls(20 * S) <= 6, `${calls(20 * S)} calls for 20 s`);
    assert.ok(calls(45 * 60 * S) <= ((45 * 60) / (A.capMs / S)) * 1.15 + 10, `${calls(45 * 60 * S)} calls for 45 min`);
    assert.ok(calls(45 * 60 * S) < (45 * 60) / 10 / 2, 'under half of a fixed 10 s interval');
  });

  test('deterministic and bounded with a truncated history', () => {
    const obs: Observation[] = Array.from({ length: 30 }, (_, i) => ({ atMs: i * 30 * S, status: 'active' }));
    assert.equal(agentPollDelay(obs, 900 * S), agentPollDelay(obs, 900 * S));
    assert.equal(agentPollDelay(obs.slice(-maxObservationsNeeded), 900 * S, noJitter), A.capMs);
    assert.equal(agentPollDelay([], 0, noJitter), A.floorMs);
  });
});
