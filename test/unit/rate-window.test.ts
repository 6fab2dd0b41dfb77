// test-lane: parallel
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  availablePermits,
  defaultLeaseMs,
  defaultMarginMs,
  estimateGrantAt,
  grantedSlotFreeAt,
  liveSlots,
  nextFreeAt,
  permitUseByMs,
  planGrants,
  planHandovers,
  theoreticalDrainMs,
  usedSlotFreeAt,
  type WindowLimit,
} from '../../src/policies/rate-window';

const L: WindowLimit = { limit: 3, windowMs: 1_000, marginMs: 100, leaseMs: 5_000 };

describe('rate-limit arithmetic', () => {
  test('defaults: margin 1% of the window within 250 ms..30 s, lease two windows', () => {
    assert.equal(defaultMarginMs(10_000), 250);
    assert.equal(defaultMarginMs(100_000), 1_000);
    assert.equal(defaultMarginMs(3_600_000), 30_000);
    assert.equal(defaultLeaseMs(10_000), 20_000);
    assert.equal(grantedSlotFreeAt(0, { limit: 1, windowMs: 10_000 }), 20_250);
    assert.equal(usedSlotFreeAt(500, { limit: 1, windowMs: 10_000 }), 10_750);
  });

  test('a granted slot is held by its lease; a reported use frees it one window (+ margin) after the use', () => {
    assert.equal(grantedSlotFreeAt(1_000, L), 6_100);
    assert.equal(usedSlotFreeAt(1_300, L), 2_400);
  });

  test('a permit must be used by the time a call then still falls in a window that ends before its lease does', () => {
    const leaseFreeAt = grantedSlotFreeAt(1_000, L); // 6_100
    const useBy = permitUseByMs(leaseFreeAt, L);
    assert.equal(useBy, 5_000);
    // A call made at the use-by time and never reported is counted by the API until useBy + window,
    // which is within the lease minus the margin: the slot is not handed on before the API frees it.
    assert.ok(useBy + L.windowMs <= leaseFreeAt - L.marginMs!);
    // With the defaults (lease two windows): one window after the grant.
    const limit = { limit: 100, windowMs: 10_000 };
    assert.equal(permitUseByMs(grantedSlotFreeAt(0, limit), limit), 10_000);
  });

  test('live slots are those that free after now', () => {
    assert.deepEqual(liveSlots([100, 2_000, 2_100, 5_000], 2_100), [5_000]);
    assert.deepEqual(liveSlots([], 5), []);
  });

  test('available permits count down to zero, never below', () => {
    assert.equal(availablePermits([], 0, L), 3);
    assert.equal(availablePermits([1_000, 1_010], 20, L), 1);
    assert.equal(availablePermits([1_000, 1_010, 1_020, 1_030, 1_040], 50, L), 0);
    assert.equal(availablePermits([1_000, 1_010, 1_020], 1_005, L), 1);
  });

  test('the next free time is now while under the limit, else when enough slots free', () => {
    assert.equal(nextFreeAt([1_000, 1_100], 50, L), 50);
    assert.equal(nextFreeAt([1_100, 1_000, 1_200], 50, L), 1_000);
    // More occupied slots than the limit (e.g. a lowered limit after continue-as-new): two must free.
    assert.equal(nextFreeAt([1_300, 1_000, 1_100, 1_200], 50, L), 1_100);
    assert.equal(nextFreeAt([1_000, 1_100, 1_200], 5_000, L), 5_000);
  });

  test('planning grants what fits FIFO and says when a slot frees for the rest', () => {
    assert.deepEqual(planGrants([], 2, 0, L), { grantNow: 2, wakeAtMs: null });
    // Three granted now, leases until 5 100: that is the wake-up unless a report comes first.
    assert.deepEqual(planGrants([], 5, 0, L), { grantNow: 3, wakeAtMs: 5_100 });
    assert.deepEqual(planGrants([1_100, 1_300], 4, 300, L), { grantNow: 1, wakeAtMs: 1_100 });
    assert.deepEqual(planGrants([1_100, 1_300, 1_400], 1, 400, L), { grantNow: 0, wakeAtMs: 1_100 });
    assert.deepEqual(planGrants([1_100, 1_300, 1_400], 0, 400, L), { grantNow: 0, wakeAtMs: null });
  });

  test('a simulated burst with late requests never puts more than limit arrivals in any API window', () => {
    const limit: WindowLimit = { limit: 100, windowMs: 10_000, marginMs: 250 };
    // Each permit is used (arrives at the API) up to 3 s after its grant and reported 200 ms later.
    const latency = (i: number) => (i * 7919) % 3_000;
    const slots: number[] = [];
    const arrivals: number[] = [];
    let queued = 300;
    let now = 0;
    let n = 0;
    const reports: { at: number; slot: number; usedAt: number }[] = [];
    while (queued > 0) {
      for (const r of reports.filter((x) => x.at <= now)) slots[r.slot] = usedSlotFreeAt(r.usedAt, limit);
      reports.splice(0, reports.length, ...reports.filter((x) => x.at > now));
      const plan = planGrants(slots, queued, now, limit);
      for (let i = 0; i < plan.grantNow; i++, n++) {
        slots.push(grantedSlotFreeAt(now, limit));
        const arrival = now + latency(n);
        arrivals.push(arrival);
        reports.push({ at: arrival + 200, slot: slots.length - 1, usedAt: arrival + 200 });
      }
      queued -= plan.grantNow;
      const nextReport = Math.min(...reports.map((r) => r.at));
      if (queued > 0) now = Math.min(plan.wakeAtMs ?? Infinity, nextReport);
    }
    assert.equal(arrivals.length, 300);
    for (const t of arrivals) {
      // The API's window at arrival t holds the arrivals in (t - window, t].
      const inWindow = arrivals.filter((a) => a > t - limit.windowMs && a <= t).length;
      assert.ok(inWindow <= 100, `window ending ${t} holds ${inWindow}`);
    }
  });

  test('hand-over: reported slots within reach go to the queue, earliest first; a lease never does', () => {
    const slots = [
      { freeAtMs: 1_500, reported: true },
      { freeAtMs: 1_200, reported: true },
      { freeAtMs: 1_300, reported: false },
      { freeAtMs: 3_000, reported: true },
    ];
    assert.deepEqual(planHandovers(slots, 5, 1_000, 600), { slots: [1, 0], wakeAtMs: 2_400 });
    assert.deepEqual(planHandovers(slots, 1, 1_000, 600), { slots: [1], wakeAtMs: null });
    assert.deepEqual(planHandovers(slots, 0, 1_000, 600), { slots: [], wakeAtMs: null });
    // A slot already free is not handed over: the plain grant path takes it.
    assert.deepEqual(planHandovers([{ freeAtMs: 900, reported: true }], 1, 1_000, 600), { slots: [], wakeAtMs: null });
  });

  test('a simulated burst with hand-overs: callers wait for notBefore, and no API window ever holds more than limit', () => {
    const limit: WindowLimit = { limit: 100, windowMs: 10_000, marginMs: 250 };
    const handoverMs = 5_000;
    const latency = (i: number) => 50 + ((i * 7919) % 2_000);
    const slots: { freeAtMs: number; reported: boolean; handedOver?: boolean }[] = [];
    const arrivals: number[] = [];
    const reports: { at: number; slot: number; usedAt: number }[] = [];
    let queued = 300;
    let now = 0;
    let n = 0;
    const use = (slot: number, earliest: number) => {
      const arrival = Math.max(earliest, now + latency(n++));
      arrivals.push(arrival);
      reports.push({ at: arrival + 100, slot, usedAt: arrival + 100 });
    };
    while (queued > 0) {
      for (const r of reports.filter((x) => x.at <= now))
        slots[r.slot] = { freeAtMs: usedSlotFreeAt(r.usedAt, limit), reported: true };
      reports.splice(0, reports.length, ...reports.filter((x) => x.at > now));
      const counted = slots.map((s, i) => ({ ...s, i })).filter((s) => !s.handedOver);
      const plan = planGrants(
        counted.map((s) => s.freeAtMs),
        queued,
        now,
        limit,
      );
      for (let i = 0; i < plan.grantNow; i++) {
        slots.push({ freeAtMs: grantedSlotFreeAt(now, limit), reported: false });
        use(slots.length - 1, now);
      }
      queued -= plan.grantNow;
      const still = slots.map((s, i) => ({ ...s, i })).filter((s) => !s.handedOver);
      const handover = planHandovers(still, queued, now, handoverMs);
      for (const index of handover.slots) {
        const previous = still[index]!;
        slots[previous.i] = { ...slots[previous.i]!, handedOver: true };
        slots.push({ freeAtMs: grantedSlotFreeAt(previous.freeAtMs, limit), reported: false });
        use(slots.length - 1, previous.freeAtMs);
      }
      queued -= handover.slots.length;
      const nextReport = Math.min(...reports.map((r) => r.at));
      if (queued > 0) now = Math.min(plan.wakeAtMs ?? Infinity, handover.wakeAtMs ?? Infinity, nextReport);
    }
    assert.equal(arrivals.length, 300);
    for (const t of arrivals) {
      const inWindow = arrivals.filter((a) => a > t - limit.windowMs && a <= t).length;
      assert.ok(inWindow <= 100, `window ending ${t} holds ${inWindow}`);
    }
    // Hand-overs keep the burst close to the minimum: the last call goes out one margin per window late, plus the first window's spread.
    assert.ok(Math.max(...arrivals) < 20_000 + 2 * 250 + 2_100 + 200, `last arrival ${Math.max(...arrivals)}`);
  });

  test('theoretical drain time', () => {
    assert.equal(theoreticalDrainMs(0, L), 0);
    assert.equal(theoreticalDrainMs(3, L), 0);
    assert.equal(theoreticalDrainMs(4, L), 1_000);
    assert.equal(theoreticalDrainMs(300, { limit: 100, windowMs: 10_000 }), 20_000);
  });
});

describe('estimateGrantAt', () => {
  const limit: WindowLimit = { limit: 3, windowMs: 1_000, marginMs: 100 };

  test('free slots are now; then each queued request takes the slot `limit` places ahead, one window per round', () => {
    assert.equal(estimateGrantAt([], 2, 0, limit), 0);
    // Two slots occupied (free at 500 and 800), one free: position 0 now, 1 at 500, 2 at 800, 3 one window after now.
    const occupied = [800, 500];
    assert.equal(estimateGrantAt(occupied, 0, 0, limit), 0);
    assert.equal(estimateGrantAt(occupied, 1, 0, limit), 500);
    assert.equal(estimateGrantAt(occupied, 2, 0, limit), 800);
    assert.equal(estimateGrantAt(occupied, 3, 0, limit), 1_100);
    assert.equal(estimateGrantAt(occupied, 4, 0, limit), 1_600);
  });
});
