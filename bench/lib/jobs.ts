// Simulated jobs: what a status poll at time t (ms since the start call) would return, and when the
// job completes. Export progress is reported as a whole percentage, as many real APIs do, or with one
// decimal (as the emulator does).
import { type Random, logUniform, uniform } from './prng';

export type Shape = 'linear-noisy' | 'linear' | 'linear-finish' | 'slow-start' | 'stall-99' | 'jumps' | 'none';

export interface SimJob {
  shape: Shape;
  /** Time spent queued before running (ms). */
  queuedMs: number;
  /** Running time (ms). */
  runMs: number;
  /** Fraction 0..1 of the work done after running for fraction x (0..1) of runMs. */
  work: (x: number) => number;
  /** Decimals of the reported progress: 0 (whole percentages) or 1. */
  decimals: number;
}

export interface SimStatus {
  status: string;
  progress?: number;
  pageCount?: number;
}

export const completionMs = (job: SimJob): number => job.queuedMs + job.runMs;

/** The status a poll at tMs would return. */
export function statusAt(job: SimJob, tMs: number, withProgress: boolean): SimStatus {
  // Only exports have a queued status; an agent job (no progress signal) reads active while it waits.
  if (tMs < job.queuedMs) return withProgress ? { status: 'queued', progress: 0, pageCount: 0 } : { status: 'active' };
  if (tMs >= completionMs(job))
    return withProgress ? { status: 'completed', progress: 100, pageCount: 500 } : { status: 'completed' };
  if (!withProgress) return { status: 'active' };
  const w = Math.min(1, Math.max(0, job.work((tMs - job.queuedMs) / job.runMs)));
  const scale = 10 ** job.decimals;
  // Only a job with a finishing stretch reads 100 while running; the others stop one step below.
  const top = job.shape === 'linear-finish' ? 100 : 100 - 1 / scale;
  const progress = Math.min(top, Math.floor(100 * scale * w) / scale);
  return { status: 'running', progress, pageCount: Math.floor(5 * progress) };
}

export interface ExportJobMix {
  /** Running time, log-uniform in [minMs, maxMs]. */
  minMs: number;
  maxMs: number;
  /** Share of the jobs that wait in the queue before they run ... */
  queuedShare: number;
  /** ... for a time uniform in [minQueuedMs, maxQueuedMs]. */
  minQueuedMs: number;
  maxQueuedMs: number;
  shapes: readonly Shape[];
  /** Progress decimals, one picked evenly per job (default whole percentages only). */
  decimals?: readonly number[];
}

export function makeExportJob(rng: Random, mix: ExportJobMix): SimJob {
  const runMs = logUniform(rng, mix.minMs, mix.maxMs);
  const queuedMs = rng() < mix.queuedShare ? uniform(rng, mix.minQueuedMs, mix.maxQueuedMs) : 0;
  const shape = mix.shapes[Math.floor(rng() * mix.shapes.length)]!;
  const work = makeWork(rng, shape);
  const decimals = mix.decimals ? mix.decimals[Math.floor(rng() * mix.decimals.length)]! : 0;
  return { shape, queuedMs, runMs, work, decimals };
}

/** An agent job: no progress; while it waits to run it reports `active` like a running one (see statusAt). */
export function makeAgentJob(rng: Random, mix: Omit<ExportJobMix, 'shapes'>): SimJob {
  const runMs = logUniform(rng, mix.minMs, mix.maxMs);
  const queuedMs = rng() < mix.queuedShare ? uniform(rng, mix.minQueuedMs, mix.maxQueuedMs) : 0;
  return { shape: 'none', queuedMs, runMs, work: () => 0, decimals: 0 };
}

function makeWork(rng: Random, shape: Shape): (x: number) => number {
  switch (shape) {
    case 'linear':
      return (x) => x;
    case 'linear-finish': {
      // Steady to 100 % at 98-99 % of the run, then at 100 % while the last pages are packaged.
      const finish = uniform(rng, 0.01, 0.02);
      return (x) => Math.min(1, x / (1 - finish));
    }
    case 'linear-noisy': {
      // Uneven page costs: a monotone warp of linear progress (rate varies by up to +-60 %), random phase.
      const k = 1 + Math.floor(rng() * 4);
      const a = uniform(rng, 0.2, 0.6);
      const phi = uniform(rng, 0, 2 * Math.PI);
      const w = (x: number): number =>
        x + (a * (Math.sin(2 * Math.PI * k * x + phi) - Math.sin(phi))) / (2 * Math.PI * k);
      const end = w(1);
      return (x) => w(x) / end;
    }
    case 'slow-start': {
      const power = uniform(rng, 1.5, 3);
      return (x) => x ** power;
    }
    case 'stall-99': {
      // Linear to 99 % over the first 30-80 % of the run, then stuck at 99 until the end.
      const reach = uniform(rng, 0.3, 0.8);
      return (x) => (x < reach ? (0.99 * x) / reach : 0.995);
    }
    case 'jumps': {
      // A few big steps: nothing for a while, then e.g. 0 -> 80 in one go.
      const steps = 1 + Math.floor(rng() * 3);
      const at = Array.from({ length: steps }, () => uniform(rng, 0.05, 0.95)).sort((p, q) => p - q);
      const levels = Array.from({ length: steps }, () => uniform(rng, 0.3, 0.99)).sort((p, q) => p - q);
      return (x) => {
        let level = 0;
        for (let i = 0; i < steps; i++) if (x >= at[i]!) level = levels[i]!;
        return level;
      };
    }
    case 'none':
      return () => 0;
  }
}
