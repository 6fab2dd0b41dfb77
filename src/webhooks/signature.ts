// X-Hub-Signature-256 checks with @octokit/webhooks-methods (HMAC-SHA256, constant-time compare). The
// package is ESM-only, and tsc (module commonjs, the image's build) compiles import() into require(),
// which cannot load it: a Function keeps the runtime's own import() under tsx and compiled alike.
import type * as WebhooksMethods from '@octokit/webhooks-methods';

export type Verify = (secret: string, payload: string, signature: string) => Promise<boolean>;

const importEsm = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

let loaded: Promise<Verify> | undefined;

/** The library's verify, loaded once. */
export function loadVerify(): Promise<Verify> {
  loaded ??= importEsm('@octokit/webhooks-methods').then((m) => (m as typeof WebhooksMethods).verify);
  return loaded;
}
