// @octokit/webhooks-methods is ESM-only and declares its types behind "exports", which this project's
// node10 module resolution does not read (tsconfig paths would also redirect tsx at run time). Its two
// functions, as its dist-types/index.d.ts declares them; loaded with import().
declare module '@octokit/webhooks-methods' {
  export function sign(secret: string, payload: string): Promise<string>;
  export function verify(secret: string, eventPayload: string, signature: string): Promise<boolean>;
}
