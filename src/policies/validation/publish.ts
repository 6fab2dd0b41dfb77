// Pure checks for publishing: a keeper's `source` (its input) and the `publish` signal's argument, which
// anyone with a Temporal client can send. The argument only says *that* something was pushed and names a
// commit and a pull request for display; it never chooses an address: the keeper builds and exports its
// own source. Shared by the keeper (sandbox-safe: no I/O) and the webhook receiver.
import type { KeeperSource, PublishRequest } from '../../shared/publishing';

const SHA = /^[0-9a-f]{7,64}$/;
/** GitHub's X-GitHub-Delivery is a UUID; anything short and plain is accepted. */
const DELIVERY_ID = /^[A-Za-z0-9._:-]{1,100}$/;
const PROJECT_ID = /^[A-Za-z0-9._-]{1,200}$/;
const REF = /^[A-Za-z0-9._/-]{1,250}$/;

/**
 * A repository as one comparable key, "host/owner/name" in lower case: the same repository named by
 * its web URL, its clone URL (".git") or "owner/name" (github.com) gives the same key. Null when it is
 * not an http(s) URL of a repository or "owner/name".
 */
export function repositoryKey(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > 500) return null;
  const short = /^([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)$/.exec(value);
  if (short) return `github.com/${short[1]}/${short[2]!.replace(/\.git$/, '')}`.toLowerCase();
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  const parts = url.pathname
    .replace(/\/+$/, '')
    .replace(/\.git$/, '')
    .split('/')
    .filter(Boolean);
  if (parts.length !== 2 || url.username || url.password) return null;
  return `${url.host}/${parts[0]}/${parts[1]}`.toLowerCase();
}

/** A branch name from "refs/heads/main" or "main"; null for tags and anything else. */
export function branchOf(ref: unknown): string | null {
  if (typeof ref !== 'string' || ref.startsWith('refs/tags/')) return null;
  const branch = ref.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : ref;
  return REF.test(branch) && !branch.includes('..') ? branch : null;
}

/** Every problem with a keeper's `source` (absent is fine); empty when valid. */
export function keeperSourceProblems(source: unknown): string[] {
  if (source === undefined) return [];
  if (typeof source !== 'object' || source === null || Array.isArray(source))
    return ['source must be an object {projectId, repository, ref}'];
  const { projectId, repository, ref } = source as Record<string, unknown>;
  const problems: string[] = [];
  if (typeof projectId !== 'string' || !PROJECT_ID.test(projectId))
    problems.push('source.projectId must be a project id (letters, digits, ".", "_", "-")');
  if (repositoryKey(repository) === null)
    problems.push("source.repository must be the repository's https URL (e.g. https://github.com/acme/docs)");
  if (branchOf(ref) === null) problems.push('source.ref must be a branch name (e.g. main)');
  return problems;
}

/** Is `request` about this source's repository and branch? (Both absent: a plain publish, yes.) */
export function concernsSource(request: PublishRequest, source: KeeperSource): boolean {
  if (request.repository !== undefined && repositoryKey(request.repository) !== repositoryKey(source.repository))
    return false;
  return request.ref === undefined || branchOf(request.ref) === branchOf(source.ref);
}

export type ReadPublish = { request: PublishRequest } | { ignored: string };

/**
 * The publish signal's argument, checked field by field: a malformed field is dropped (it is only for
 * display), a request for another repository or branch is ignored whole. `undefined` is a plain publish.
 */
export function readPublishRequest(raw: unknown, source: KeeperSource | undefined): ReadPublish {
  if (raw === undefined || raw === null) return { request: {} };
  if (typeof raw !== 'object' || Array.isArray(raw)) return { ignored: 'the publish argument is not an object' };
  const r = raw as Record<string, unknown>;
  const request: PublishRequest = {};
  if (r.repository !== undefined) {
    if (repositoryKey(r.repository) === null) return { ignored: 'repository is not a repository URL' };
    request.repository = r.repository as string;
  }
  if (r.ref !== undefined) {
    if (branchOf(r.ref) === null) return { ignored: 'ref is not a branch' };
    request.ref = r.ref as string;
  }
  if (source && !concernsSource(request, source)) return { ignored: "not this keeper's repository and branch" };
  if (typeof r.sha === 'string' && SHA.test(r.sha)) request.sha = r.sha;
  if (typeof r.deliveryId === 'string' && DELIVERY_ID.test(r.deliveryId)) request.deliveryId = r.deliveryId;
  const pr = r.pullRequest as Record<string, unknown> | undefined;
  if (pr && typeof pr === 'object' && Number.isInteger(pr.number) && (pr.number as number) > 0) {
    const url = typeof pr.url === 'string' ? pr.url : '';
    // Shown in the Web UI as a link: only a pull request page of the keeper's own repository.
    const own = source ? `https://${repositoryKey(source.repository)}/pull/${String(pr.number)}` : null;
    if (own !== null && url.toLowerCase() === own) request.pullRequest = { number: pr.number as number, url };
  }
  if (typeof r.agentWorkflowId === 'string' && /^[\x21-\x7e]{1,200}$/.test(r.agentWorkflowId))
    request.agentWorkflowId = r.agentWorkflowId;
  return { request };
}
