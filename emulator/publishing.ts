// Publishing in the emulator: each project's deployment branch head (moved by POST /_emulator/push, which
// stands in for GitHub), deployment updates that build the head they saw when triggered, and the content
// an export sees: the commit of the project's last update that succeeded before the export started.
// As for exports, an update's status is a function of the clock (no timers).
import { randomBytes } from 'node:crypto';
import type { DocumentedDeploymentUpdate } from './documented';

/** The documented filesChanged: the paths a commit added, modified and removed. */
export interface FilesChanged {
  added: string[];
  modified: string[];
  removed: string[];
}

export type CommitAuthor = NonNullable<DocumentedDeploymentUpdate['author']>;

export interface Commit {
  sha: string;
  ref: string;
  message: string;
  filesChanged: FilesChanged;
  /** Who pushed it; null for a project's initial commit, which nobody pushed here. */
  author: CommitAuthor | null;
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
  /** Default: one modified page. */
  filesChanged?: Partial<FilesChanged>;
  /** The author's name (default "docs-emulator"). */
  author?: string;
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
      filesChanged: filesChangedOf(request.filesChanged),
      author: { name: request.author ?? 'docs-emulator' },
    };
    this.#heads.set(request.projectId, commit);
    if (request.domain) this.#projectOfDomain.set(request.domain, request.projectId);
    return commit;
  }

  /** The head a new update builds; a project never pushed to has a stable initial commit. */
  head(projectId: string): Commit {
    let head = this.#heads.get(projectId);
    if (!head) {
      const filesChanged = { added: [], modified: [], removed: [] };
      head = { sha: randomSha(), ref: 'main', message: 'Initial commit', filesChanged, author: null };
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

/** What a push changed: the lists given (a missing one empty), or one modified page. */
function filesChangedOf(given: Partial<FilesChanged> | undefined): FilesChanged {
  if (!given) return { added: [], modified: ['index.mdx'], removed: [] };
  return {
    added: [...(given.added ?? [])],
    modified: [...(given.modified ?? [])],
    removed: [...(given.removed ?? [])],
  };
}

const endMs = (u: UpdateRecord): number => u.createdAtMs + u.queuedMs + u.buildMs;

/** An update as GET /v1/project/update-status/{statusId} documents it, with every field the emulator knows. */
export type UpdateView = DocumentedDeploymentUpdate & { status: NonNullable<DocumentedDeploymentUpdate['status']> };

/** The update's status at `nowMs`; `baseUrl` is where the emulator is reached (screenshot links it never serves). */
export function updateView(u: UpdateRecord, nowMs: number, baseUrl: string): UpdateView {
  const started = u.createdAtMs + u.queuedMs;
  const ended = endMs(u);
  const { sha, ref, message, filesChanged, author } = u.commit;
  const short = sha.slice(0, 7);
  const base = {
    _id: u.statusId,
    projectId: u.projectId,
    createdAt: iso(u.createdAtMs),
    subdomain: subdomainOf(u.projectId),
    author: author && { ...author },
    commit: { sha, ref, message, filesChanged: structuredClone(filesChanged) },
    source: 'api' as const,
  };
  const logs = [`${iso(u.createdAtMs)} queued: build of ${ref} at ${short}`];
  // endedAt is a string in the document, not nullable: it is left out until the update ends.
  if (nowMs < started) return { ...base, status: 'queued', summary: 'Update queued', logs };
  const count = filesChanged.added.length + filesChanged.modified.length + filesChanged.removed.length;
  logs.push(`${iso(started)} building ${count} changed file(s)`);
  if (nowMs < ended) return { ...base, status: 'in_progress', summary: `Building ${short}`, logs };
  const endedAt = iso(ended);
  if (u.failure !== null)
    return { ...base, status: 'failure', summary: `Build of ${short} failed`, logs: [...logs, u.failure], endedAt };
  const shot = `${baseUrl}/screenshots/${encodeURIComponent(u.statusId)}`;
  return {
    ...base,
    status: 'success',
    summary: `Deployed ${short}`,
    logs: [...logs, `${endedAt} published`],
    endedAt,
    screenshot: `${shot}.png`,
    screenshotLight: `${shot}-light.png`,
    screenshotDark: `${shot}-dark.png`,
  };
}

/** A project's docs subdomain (<subdomain>.mintlify.app on the platform). */
const subdomainOf = (projectId: string): string =>
  projectId
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63) || 'docs';
