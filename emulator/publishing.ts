// Publishing in the emulator: each project's deployment branch head (moved by POST /_emulator/push, which
// stands in for GitHub), deployment updates that build the head they saw when triggered, and the content
// an export sees: the commit of the project's last update that succeeded before the export started.
// As for exports, an update's status is a function of the clock (no timers).
import { randomBytes } from 'node:crypto';
import type { DeploymentCommit } from '../src/api/types';

export interface Commit {
  sha: string;
  ref: string;
  message: string;
  filesChanged: number;
}

export interface UpdateRecord {
  statusId: string;
  projectId: string;
  commit: Commit;
  createdAtMs: number;
  queuedMs: number;
  buildMs: number;
  /** Why the build fails, or null. */
  failure: string | null;
}

/** What an export of a domain publishes: the commit and how many commits were published before it. */
export interface PublishedContent {
  commit: Commit;
  /** 1 for the first published commit; the export's page count grows with it (stale vs fresh). */
  generation: number;
}

const iso = (ms: number): string => new Date(ms).toISOString();

const randomSha = (): string => randomBytes(20).toString('hex');

export interface PushRequest {
  projectId: string;
  /** Exports of this domain publish this project's content from now on. */
  domain?: string;
  ref?: string;
  sha?: string;
  message?: string;
  filesChanged?: number;
}

export class Publishing {
  #heads = new Map<string, Commit>();
  #updates = new Map<string, UpdateRecord>();
  #projectOfDomain = new Map<string, string>();

  /** Moves a project's branch head (a merge or push on GitHub). */
  push(request: PushRequest): Commit {
    const commit: Commit = {
      sha: request.sha ?? randomSha(),
      ref: request.ref ?? 'main',
      message: request.message ?? 'Update docs',
      filesChanged: request.filesChanged ?? 1,
    };
    this.#heads.set(request.projectId, commit);
    if (request.domain) this.#projectOfDomain.set(request.domain, request.projectId);
    return commit;
  }

  /** The head a new update builds; a project never pushed to has a stable initial commit. */
  head(projectId: string): Commit {
    let head = this.#heads.get(projectId);
    if (!head) {
      head = { sha: randomSha(), ref: 'main', message: 'Initial commit', filesChanged: 0 };
      this.#heads.set(projectId, head);
    }
    return head;
  }

  add(record: UpdateRecord): void {
    this.#updates.set(record.statusId, record);
  }

  get(statusId: string): UpdateRecord | undefined {
    return this.#updates.get(statusId);
  }

  updates(): UpdateRecord[] {
    return [...this.#updates.values()];
  }

  /** The content an export of `domain` started at `nowMs` publishes, or null (the emulator's default pages). */
  publishedFor(domain: string, nowMs: number): PublishedContent | null {
    const projectId = this.#projectOfDomain.get(domain);
    if (projectId === undefined) return null;
    const done = [...this.#updates.values()]
      .filter((u) => u.projectId === projectId && u.failure === null && endMs(u) <= nowMs)
      .sort((a, b) => endMs(a) - endMs(b));
    const last = done[done.length - 1];
    if (!last) return null;
    return { commit: last.commit, generation: new Set(done.map((u) => u.commit.sha)).size };
  }

  clear(): void {
    this.#heads.clear();
    this.#updates.clear();
    this.#projectOfDomain.clear();
  }
}

const endMs = (u: UpdateRecord): number => u.createdAtMs + u.queuedMs + u.buildMs;

export interface UpdateView {
  status: 'queued' | 'in_progress' | 'success' | 'failure';
  commit: DeploymentCommit;
  source: string;
  logs: string[];
  createdAt: string;
  endedAt: string | null;
}

export function updateView(u: UpdateRecord, nowMs: number): UpdateView {
  const started = u.createdAtMs + u.queuedMs;
  const ended = endMs(u);
  const base = { commit: { ...u.commit }, source: 'api', createdAt: iso(u.createdAtMs) };
  const logs = [`${iso(u.createdAtMs)} queued: build of ${u.commit.ref} at ${u.commit.sha.slice(0, 7)}`];
  if (nowMs < started) return { ...base, status: 'queued', logs, endedAt: null };
  logs.push(`${iso(started)} building ${u.commit.filesChanged} changed file(s)`);
  if (nowMs < ended) return { ...base, status: 'in_progress', logs, endedAt: null };
  if (u.failure !== null) return { ...base, status: 'failure', logs: [...logs, u.failure], endedAt: iso(ended) };
  return { ...base, status: 'success', logs: [...logs, `${iso(ended)} published`], endedAt: iso(ended) };
}
