// Seedable pseudo-random numbers for the simulations (mulberry32): same seed, same run.

import { type Random, seededRandom } from '../../emulator';

export type { Random };
export const mulberry32 = seededRandom;

/** An independent stream derived from a seed and a label (e.g. a scenario or a job index). */
export function deriveSeed(seed: number, ...labels: (string | number)[]): number {
  let h = (seed ^ 0x9e3779b9) >>> 0;
  for (const label of labels) {
    const s = String(label);
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
    h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d) >>> 0;
  }
  return h;
}

export function uniform(rng: Random, lo: number, hi: number): number {
  return lo + (hi - lo) * rng();
}

export function logUniform(rng: Random, lo: number, hi: number): number {
  return Math.exp(uniform(rng, Math.log(lo), Math.log(hi)));
}
