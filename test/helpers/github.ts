// A local GitHub: real webhook payload examples (@octokit/webhooks-examples) adapted to a repository,
// branch and commit, signed with X-Hub-Signature-256 (@octokit/webhooks-methods) and posted to the receiver.
import { randomBytes, randomUUID } from 'node:crypto';
import examples from '@octokit/webhooks-examples/api.github.com/index.json';
import { request } from 'undici';

type Payload = Record<string, unknown>;

function example(event: string, pick: (p: Payload) => boolean): Payload {
  const def = (examples as { name: string; examples: Payload[] }[]).find((d) => d.name === event);
  const found = def?.examples.find(pick);
  if (!found) throw new Error(`no ${event} example in @octokit/webhooks-examples`);
  return structuredClone(found);
}

export const randomSha = (): string => randomBytes(20).toString('hex');

/** GitHub's push to `branch` of `repositoryUrl` (https://github.com/owner/name) with head `sha`. */
export function pushPayload(repositoryUrl: string, branch: string, sha: string, message = 'Update docs'): Payload {
  const p = example('push', (e) => typeof e.ref === 'string' && e.ref.startsWith('refs/heads/') && e.deleted === false);
  const [owner, name] = new URL(repositoryUrl).pathname.slice(1).split('/');
  p.ref = `refs/heads/${branch}`;
  p.after = sha;
  p.repository = { ...(p.repository as Payload), html_url: repositoryUrl, name, full_name: `${owner}/${name}` };
  p.head_commit = { ...(p.head_commit as Payload), id: sha, message };
  return p;
}

/** GitHub's pull_request closed with merged: true into `branch`, merge commit `sha`. */
export function mergedPayload(prUrl: string, branch: string, sha: string): Payload {
  const p = example('pull_request', (e) => e.action === 'closed');
  const repositoryUrl = prUrl.replace(/\/pull\/\d+$/, '');
  const pr = p.pull_request as Payload;
  p.number = Number(/\/pull\/(\d+)$/.exec(prUrl)![1]);
  p.pull_request = {
    ...pr,
    number: p.number,
    html_url: prUrl,
    merged: true,
    merge_commit_sha: sha,
    base: { ...(pr.base as Payload), ref: branch },
  };
  p.repository = { ...(p.repository as Payload), html_url: repositoryUrl };
  return p;
}

export interface Delivery {
  event: string;
  payload: Payload | string;
  /** Default: a fresh UUID (a redelivery reuses one). */
  id?: string;
  /** Signs with this secret (default: the sender's). */
  secret?: string;
}

export async function githubSender(receiverUrl: string, secret: string) {
  const { sign } = await import('@octokit/webhooks-methods');
  return async (d: Delivery): Promise<{ status: number; text: string; id: string }> => {
    const body = typeof d.payload === 'string' ? d.payload : JSON.stringify(d.payload);
    const id = d.id ?? randomUUID();
    const res = await request(`${receiverUrl}/github`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': d.event,
        'x-github-delivery': id,
        'x-hub-signature-256': await sign(d.secret ?? secret, body),
        'user-agent': 'GitHub-Hookshot/test',
      },
      body,
    });
    return { status: res.statusCode, text: (await res.body.text()).trim(), id };
  };
}
