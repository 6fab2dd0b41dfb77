// Job state of the emulator. Status is a function of the clock (no timers), so an injected clock
// moves every job forward consistently and thousands of jobs cost nothing while idle.
import type { AgentJob, StaticExportJob } from '../src/api/types';
import type { AgentOutcome, EmulatorOptions, ProgressShape } from './options';
import type { PublishedContent } from './publishing';
import { tarGz } from './tar';

export interface AgentJobRecord {
  id: string;
  projectId: string;
  prompt: string;
  messages: string[];
  createdAtMs: number;
  activeUntilMs: number;
  outcome: AgentOutcome;
  repository: string;
  model: string;
  /** PR number once the agent has opened one (kept across follow-up messages). */
  prNumber: number | null;
}

export interface ExportRecord {
  jobId: string;
  domain: string;
  version: string;
  paths: string[] | null;
  createdAtMs: number;
  queuedMs: number;
  durationMs: number;
  totalPages: number;
  shape: ProgressShape;
  failure: string | null;
  /** Highest progress reported so far: progress never goes back. */
  maxProgress: number;
  archive: Buffer | null;
  /** The published commit the export renders (null: the emulator's default content). */
  published: PublishedContent | null;
}

const iso = (ms: number): string => new Date(ms).toISOString();

export function agentJobView(job: AgentJobRecord, nowMs: number): AgentJob {
  const repoUrl = `https://github.com/${job.repository}`;
  const prLink = job.prNumber === null ? null : `${repoUrl}/pull/${job.prNumber}`;
  const base = {
    id: job.id,
    source: { repository: repoUrl, ref: 'main' },
    model: job.model,
    createdAt: iso(job.createdAtMs),
  };
  if (nowMs < job.activeUntilMs) return { ...base, status: 'active', prLink: null, archivedAt: null };
  switch (job.outcome) {
    case 'pr':
    case 'no-change':
      return { ...base, status: 'completed', prLink, archivedAt: null };
    case 'archived':
      return { ...base, status: 'archived', prLink, archivedAt: iso(job.activeUntilMs) };
    case 'failed':
      return { ...base, status: 'failed', prLink, archivedAt: null };
  }
}

function shapeFraction(shape: ProgressShape, t: number): number {
  switch (shape) {
    case 'linear':
      return t;
    case 'slow-start':
      return t * t;
    case 'stall-at-99':
      return Math.min(0.99, (t / 0.5) * 0.99);
    case 'jumps':
      return Math.floor(t * 4) / 4;
  }
}

/** Failures happen halfway through rendering. */
const FAIL_AT = 0.5;

export function exportView(job: ExportRecord, nowMs: number): StaticExportJob {
  const createdAt = iso(job.createdAtMs);
  const elapsed = nowMs - job.createdAtMs;
  if (elapsed < job.queuedMs) {
    return { jobId: job.jobId, status: 'queued', progress: 0, pageCount: 0, createdAt, updatedAt: createdAt };
  }
  const t = (elapsed - job.queuedMs) / Math.max(1, job.durationMs);
  const startedMs = job.createdAtMs + job.queuedMs;
  if (job.failure !== null && t >= FAIL_AT) {
    const progress = Math.max(job.maxProgress, progressOf(job.shape, FAIL_AT));
    return {
      jobId: job.jobId,
      status: 'failed',
      progress,
      pageCount: Math.floor((progress / 100) * job.totalPages),
      createdAt,
      updatedAt: iso(startedMs + FAIL_AT * job.durationMs),
      error: job.failure,
    };
  }
  if (t >= 1) {
    job.maxProgress = 100;
    return {
      jobId: job.jobId,
      status: 'completed',
      progress: 100,
      pageCount: job.totalPages,
      createdAt,
      updatedAt: iso(startedMs + job.durationMs),
    };
  }
  const progress = Math.max(job.maxProgress, progressOf(job.shape, t));
  job.maxProgress = progress;
  return {
    jobId: job.jobId,
    status: 'running',
    progress,
    pageCount: Math.min(job.totalPages - 1, Math.floor((progress / 100) * job.totalPages)),
    createdAt,
    updatedAt: iso(nowMs),
  };
}

function progressOf(shape: ProgressShape, t: number): number {
  // One decimal, never 100 while running.
  return Math.min(99.9, Math.round(shapeFraction(shape, Math.max(0, Math.min(1, t))) * 1000) / 10);
}

export function newExportRecord(
  jobId: string,
  request: { domain: string; version?: string; paths?: string[] },
  nowMs: number,
  options: EmulatorOptions,
  published: PublishedContent | null = null,
): ExportRecord {
  const paths = request.paths && request.paths.length > 0 ? request.paths : null;
  // Each published commit adds a page: an export of fresh content differs from a stale one.
  return {
    jobId,
    domain: request.domain,
    version: request.version ?? 'latest',
    paths,
    createdAtMs: nowMs,
    queuedMs: options.exportQueuedMs,
    durationMs: options.durationFor?.('export', request.domain) ?? options.exportDurationMs,
    totalPages: Math.max(1, paths ? paths.length : options.exportTotalPages + (published?.generation ?? 0)),
    shape: options.progressShape,
    failure: options.exportFailure(request.domain),
    maxProgress: 0,
    archive: null,
    published,
  };
}

function pageFile(path: string, index: number): string {
  const clean = path
    .split('/')
    .filter((s) => s !== '' && s !== '.' && s !== '..')
    .map((s) => s.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 60))
    .join('/');
  return `${clean || (index === 0 ? 'index' : `page-${index}`)}.html`;
}

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** The export's archive: one HTML page per exported page. Built once per job and reused. */
export function exportArchive(job: ExportRecord): Buffer {
  if (job.archive) return job.archive;
  const names = new Set<string>(['commit.txt']);
  const commit = job.published?.commit;
  const entries = [];
  if (commit) entries.push({ name: 'commit.txt', mtimeMs: job.createdAtMs, content: `${commit.sha}\n` });
  for (let i = 0; i < job.totalPages; i++) {
    const path = job.paths ? job.paths[i]! : i === 0 ? '/' : `/docs/page-${i}`;
    let name = pageFile(path, i);
    if (names.has(name)) name = name.replace(/\.html$/, `-${i}.html`);
    names.add(name);
    const title = `${escapeHtml(job.domain)} ${escapeHtml(path)}`;
    entries.push({
      name,
      mtimeMs: job.createdAtMs,
      content:
        `<!doctype html>\n<html><head><meta charset="utf-8"><title>${title}</title></head>\n` +
        `<body><h1>${title}</h1><p>Static export ${job.jobId}, version ${escapeHtml(job.version)}` +
        `${commit ? `, commit ${commit.sha}` : ''}.</p></body></html>\n`,
    });
  }
  job.archive = tarGz(entries);
  return job.archive;
}
