// Spare permits of one worker process. While a project is busy, the process asks its limiter for a
// few permits more than its jobs asked for, and answers its next asks from them, with no round trip to
// the limiter: on a loaded server that round trip held each job's first workflow task for 0.8-3 s.
// Every spare is a real grant of the limiter, to a holder id of this process (no workflow): the job
// that takes one reports its use under the spare's identity (grantedAs), and spares nobody took for a
// while, or too old to be used safely, are given back, so their slots free at once.
import { randomUUID } from 'node:crypto';
import type { PermitAdmission, PermitRequest } from '../shared/rate-limiter';

/** Spares at most per project and process: a burst's next asks, not a share of the window. */
export const MAX_SPARES = 16;
/** Asks seen this recently tell how busy the project is (and so how many spares to ask for). */
const DEMAND_WINDOW_MS = 2_000;
/** Spares nobody took for this long go back to the limiter. */
export const SPARE_IDLE_MS = 5_000;
/**
 * Only for windows this long: a spare must be usable for half a window after it is handed out, and
 * a short window's spares would expire on a busy worker (the API's window is an hour).
 */
export const SPARE_MIN_WINDOW_MS = 60_000;
/** Hand-outs remembered for repeated asks, at most. */
const MAX_REMEMBERED = 10_000;

export interface SparePermitOptions {
  /** The rate limit's window (AGENT_RATE_LIMIT): spares are used only while half of it remains. */
  windowMs: number;
  /** Gives spares back to the project's limiter (a signal; best effort). */
  release: (projectId: string, spares: PermitRequest[]) => void;
  idleMs?: number;
}

interface Spare {
  requestKey: string;
  useByMs: number;
}

interface ProjectSpares {
  spares: Spare[];
  /** Spares asked for in admissions still in flight. */
  promised: number;
  /** Asks waiting for those. */
  waiting: number;
  wake: (() => void)[];
  /** When the recent asks came (demand). */
  askedAtMs: number[];
  idle?: NodeJS.Timeout;
}

export class SparePermits {
  /** The holder of this process's spares at every limiter (no workflow has this id). */
  readonly holder = `spare-permits:${randomUUID()}`;
  private readonly projects = new Map<string, ProjectSpares>();
  /** Which spare each ask got: a repeated ask (a retried local activity) gets the same one again. */
  private readonly handedOut = new Map<string, Spare>();
  private nextKey = 0;
  private readonly enabled: boolean;

  constructor(private readonly options: SparePermitOptions) {
    this.enabled = options.windowMs >= SPARE_MIN_WINDOW_MS;
  }

  /**
   * A spare for this ask, or undefined: from the pool, or from spares already asked for (it waits for
   * that admission, which has its own deadline), unless there are fewer of those than asks waiting.
   * An ask aborted while it waits (its activity cancelled at shutdown) takes none: nobody would use it.
   */
  async take(
    projectId: string,
    ask: PermitRequest,
    signal?: AbortSignal,
    nowMs = Date.now(),
  ): Promise<(PermitRequest & Spare) | undefined> {
    if (!this.enabled || signal?.aborted) return undefined;
    const project = this.project(projectId);
    const askKey = JSON.stringify([projectId, ask.requesterWorkflowId, ask.requestKey]);
    const known = this.handedOut.get(askKey);
    if (known && this.usable(known, Date.now())) return this.identity(known);
    project.askedAtMs.push(nowMs);
    for (;;) {
      const spare = this.fresh(projectId, project);
      if (spare) {
        this.forgetExpired();
        this.handedOut.set(askKey, spare);
        this.idleLater(projectId, project);
        return this.identity(spare);
      }
      if (project.promised <= project.waiting) return undefined;
      project.waiting += 1;
      let stopWaiting = (): void => undefined;
      await new Promise<void>((resolve) => {
        project.wake.push(resolve);
        stopWaiting = resolve;
        signal?.addEventListener('abort', stopWaiting, { once: true });
      });
      // Woken by the admission: the listener must not pile up on the signal over several waits.
      signal?.removeEventListener('abort', stopWaiting);
      project.waiting -= 1;
      if (signal?.aborted) return undefined;
    }
  }

  /** The spare keys to ask for with `asking` requests of this project: as many as its recent other asks, up to MAX_SPARES. */
  want(projectId: string, asking: number, nowMs = Date.now()): string[] {
    if (!this.enabled) return [];
    const project = this.project(projectId);
    project.askedAtMs = project.askedAtMs.filter((t) => nowMs - t <= DEMAND_WINDOW_MS);
    const others = project.askedAtMs.length - asking;
    const count = Math.min(MAX_SPARES, others) - project.spares.length - project.promised;
    if (count <= 0) return [];
    project.promised += count;
    return Array.from({ length: count }, () => `s${++this.nextKey}`);
  }

  /** The limiter's answers to spares asked for by want() (none when the admission failed). */
  settle(projectId: string, asked: readonly string[], answers: readonly PermitAdmission[]): void {
    if (asked.length === 0) return;
    const project = this.project(projectId);
    project.promised -= asked.length;
    for (const answer of answers) {
      if (answer?.granted && asked.includes(answer.requestKey) && Number.isFinite(answer.useByMs))
        project.spares.push({ requestKey: answer.requestKey, useByMs: answer.useByMs! });
    }
    for (const wake of project.wake.splice(0)) wake();
    if (project.spares.length > 0) this.idleLater(projectId, project);
  }

  /** Gives every spare back (the worker is shutting down). */
  releaseAll(): void {
    for (const [projectId, project] of this.projects) this.releaseIdle(projectId, project);
  }

  private usable(spare: Spare, nowMs: number): boolean {
    return spare.useByMs - nowMs >= this.options.windowMs / 2;
  }

  /** The oldest spare still usable; older ones go back. */
  private fresh(projectId: string, project: ProjectSpares): Spare | undefined {
    const now = Date.now();
    const firstUsable = project.spares.findIndex((s) => this.usable(s, now));
    const old = project.spares.splice(0, firstUsable < 0 ? project.spares.length : firstUsable);
    if (old.length > 0)
      this.options.release(
        projectId,
        old.map((s) => this.identity(s)),
      );
    return project.spares.shift();
  }

  private idleLater(projectId: string, project: ProjectSpares): void {
    clearTimeout(project.idle);
    project.idle = setTimeout(() => this.releaseIdle(projectId, project), this.options.idleMs ?? SPARE_IDLE_MS);
    project.idle.unref();
  }

  private releaseIdle(projectId: string, project: ProjectSpares): void {
    clearTimeout(project.idle);
    project.idle = undefined;
    const spares = project.spares.splice(0);
    if (spares.length > 0)
      this.options.release(
        projectId,
        spares.map((s) => this.identity(s)),
      );
    if (project.promised === 0 && project.waiting === 0) this.projects.delete(projectId);
  }

  /** Drops what can no longer be used, oldest first (in order of hand-out; bounded either way). */
  private forgetExpired(): void {
    const now = Date.now();
    for (const [key, spare] of this.handedOut) {
      if (spare.useByMs > now && this.handedOut.size <= MAX_REMEMBERED) break;
      this.handedOut.delete(key);
    }
  }

  private identity(spare: Spare): PermitRequest & Spare {
    return { requesterWorkflowId: this.holder, ...spare };
  }

  private project(projectId: string): ProjectSpares {
    let project = this.projects.get(projectId);
    if (!project) {
      project = { spares: [], promised: 0, waiting: 0, wake: [], askedAtMs: [] };
      this.projects.set(projectId, project);
    }
    return project;
  }
}
