// oidc-provider 8 ships no types (and is ESM-only: loaded with import()). The part of its API that
// sso-provider/provider.ts uses, as its docs (docs/README.md, lib/provider.js) describe it.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface InteractionDetails {
    uid: string;
    prompt: { name: string; details: Record<string, unknown> };
    params: Record<string, unknown> & { client_id?: string; scope?: string };
    grantId?: string;
    session?: { accountId?: string };
  }

  export const errors: { InvalidTarget: new (description?: string) => Error };

  export class Grant {
    constructor(init: { accountId: string; clientId: string });
    addOIDCScope(scope: string): void;
    addResourceScope(resource: string, scope: string): void;
    save(): Promise<string>;
  }

  export interface Token {
    accountId?: string;
    clientId?: string;
    kind: string;
  }

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    proxy: boolean;
    Grant: typeof Grant;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
    on(event: string, listener: (...args: unknown[]) => void): this;
  }
}

declare module 'oidc-provider/lib/adapters/memory_adapter.js' {
  /** The provider's default storage (tokens, sessions, grants) in this process's memory. */
  export default class MemoryAdapter {
    constructor(model: string);
    readonly model: string;
    find(id: string): Promise<Record<string, unknown> | undefined>;
  }
}
