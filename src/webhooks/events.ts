// What a GitHub webhook delivery asks of the keepers, as a pure function of its event name and body:
// a push to a branch, or a pull request closed with merged: true, becomes a publish for the keepers of
// that repository and branch; ping is answered; everything else is acknowledged and ignored.
import { branchOf, repositoryKey } from '../policies/validation/publish';

export type WebhookAction =
  | { kind: 'ping' }
  | { kind: 'ignore'; reason: string }
  | {
      kind: 'publish';
      /** repositoryKey of the repository. */
      repository: string;
      repositoryUrl: string;
      branch: string;
      sha: string | null;
      pullRequest: { number: number; url: string } | null;
    };

const ZERO_SHA = /^0+$/;

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** The action of one delivery; throws a one-line Error when the body is not what the event promises. */
export function webhookAction(event: string, body: unknown): WebhookAction {
  const b = obj(body);
  if (event === 'ping') return { kind: 'ping' };
  if (event !== 'push' && event !== 'pull_request') return { kind: 'ignore', reason: `event ${event} is not used` };
  const repo = obj(b.repository);
  const repositoryUrl = str(repo.html_url);
  const repository = repositoryKey(repositoryUrl);
  if (!repositoryUrl || !repository) throw new Error(`${event} without repository.html_url`);
  if (event === 'push') {
    if (typeof b.ref !== 'string') throw new Error('push without ref');
    const branch = b.ref.startsWith('refs/heads/') ? branchOf(b.ref) : null;
    if (!branch) return { kind: 'ignore', reason: `push to ${b.ref.slice(0, 100)} (not a branch)` };
    if (b.deleted === true) return { kind: 'ignore', reason: `branch ${branch} deleted` };
    const sha = str(b.after);
    return {
      kind: 'publish',
      repository,
      repositoryUrl,
      branch,
      sha: sha && !ZERO_SHA.test(sha) ? sha : null,
      pullRequest: null,
    };
  }
  const pr = obj(b.pull_request);
  if (b.action !== 'closed' || pr.merged !== true)
    return { kind: 'ignore', reason: `pull_request ${String(b.action).slice(0, 40)} (not a merge)` };
  const branch = branchOf(obj(pr.base).ref);
  const number = pr.number;
  const url = str(pr.html_url);
  if (!branch || !Number.isInteger(number) || !url)
    throw new Error('merged pull_request without base.ref, number or html_url');
  return {
    kind: 'publish',
    repository,
    repositoryUrl,
    branch,
    sha: str(pr.merge_commit_sha),
    pullRequest: { number: number as number, url },
  };
}
