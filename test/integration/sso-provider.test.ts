// test-lane: parallel
// The sign-on provider as a process (sso-provider/main.ts): a service's client-credentials token, a
// person's login through the form and the code exchange (driven with fetch, cookies kept by hand), the
// tokens verified with jose against the provider's JWKS, and a user added to the file while it runs.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createRemoteJWKSet, type JWTPayload, jwtVerify } from 'jose';
import { stringify } from 'yaml';
import { DEFAULT_TOKEN_AUDIENCE } from '../../src/shared/roles';
import { hashPassword } from '../../sso-provider/directory';
import { type SsoProviderProcess, startSsoProviderProcess, UI_REDIRECT_URI } from '../helpers/sso';

let sso: SsoProviderProcess;
let jwks: ReturnType<typeof createRemoteJWKSet>;

before(async () => {
  sso = await startSsoProviderProcess();
  const discovery = (await (await fetch(`${sso.issuer}/.well-known/openid-configuration`)).json()) as {
    jwks_uri: string;
  };
  jwks = createRemoteJWKSet(new URL(discovery.jwks_uri));
});
after(async () => {
  const stopMs = await sso.stop();
  assert.ok(stopMs < 3_000, `SIGTERM took ${stopMs} ms`);
});

const secretOf = (clientId: string) => readFileSync(path.join(sso.folder, `${clientId}.secret`), 'utf8').trim();
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

async function token(clientId: string, secret: string, form: Record<string, string>): Promise<Response> {
  return fetch(`${sso.issuer}/token`, {
    method: 'POST',
    headers: { authorization: basic(clientId, secret), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
}

const verifyAccess = async (jwt: string): Promise<JWTPayload> =>
  (await jwtVerify(jwt, jwks, { issuer: sso.issuer, audience: DEFAULT_TOKEN_AUDIENCE, algorithms: ['RS256'] })).payload;

describe('client credentials', () => {
  test('a service gets a JWT with its permissions; the provider logs no secret', async () => {
    const res = await token('docs-admin-worker', secretOf('docs-admin-worker'), { grant_type: 'client_credentials' });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { access_token: string; expires_in: number };
    assert.equal(body.expires_in, 900);
    const claims = await verifyAccess(body.access_token);
    assert.equal(claims.sub, 'docs-admin-worker');
    assert.deepEqual(claims.permissions, ['default:write']);
    const setup = await token('docs-admin-setup', secretOf('docs-admin-setup'), { grant_type: 'client_credentials' });
    const setupClaims = await verifyAccess(((await setup.json()) as { access_token: string }).access_token);
    assert.deepEqual(setupClaims.permissions, ['default:admin', 'temporal-system:admin']);
    assert.doesNotMatch(sso.output(), new RegExp(secretOf('docs-admin-worker')));
    assert.equal(sso.output().trim().split('\n').length, 1, sso.output());
  });

  test('a wrong secret, an unknown client and another resource are refused', async () => {
    const wrong = await token('docs-admin-worker', 'not-the-secret', { grant_type: 'client_credentials' });
    assert.equal(wrong.status, 401);
    const unknown = await token('nobody', 'x', { grant_type: 'client_credentials' });
    assert.equal(unknown.status, 401);
    const other = await token('docs-admin-worker', secretOf('docs-admin-worker'), {
      grant_type: 'client_credentials',
      resource: 'urn:someone:else',
    });
    assert.equal(other.status, 400);
  });

  test('a service added to the file while the provider runs gets tokens; one removed gets none', async () => {
    writeFileSync(path.join(sso.folder, 'late-service.secret'), 'late-service-secret-0123456789\n');
    const text = readFileSync(sso.directoryFile, 'utf8');
    const entry = stringify([
      { clientId: 'late-service', secretFile: 'late-service.secret', roles: { default: 'reader' } },
    ]);
    writeFileSync(sso.directoryFile, `${text.trimEnd()}\n${entry.replace(/^/gm, '  ').trimEnd()}\n`);
    const res = await token('late-service', 'late-service-secret-0123456789', { grant_type: 'client_credentials' });
    assert.equal(res.status, 200, await res.clone().text());
    const claims = await verifyAccess(((await res.json()) as { access_token: string }).access_token);
    assert.deepEqual(claims.permissions, ['default:read']);
    writeFileSync(sso.directoryFile, text);
    const gone = await token('late-service', 'late-service-secret-0123456789', { grant_type: 'client_credentials' });
    assert.equal(gone.status, 401);
  });

  test('an app cannot take client-credentials tokens', async () => {
    const res = await token('temporal-ui', secretOf('temporal-ui'), { grant_type: 'client_credentials' });
    assert.equal(res.status, 400);
  });
});

/** A browser's part of the code flow: redirects followed by hand, cookies kept by name. */
class Browser {
  private readonly cookies = new Map<string, string>();

  async get(url: string): Promise<Response> {
    return this.request(url, { method: 'GET' });
  }

  async post(url: string, form: Record<string, string>): Promise<Response> {
    return this.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
    });
  }

  /** Follows redirects within the provider; stops at the app's redirect URI (returned as the URL). */
  async follow(res: Response): Promise<Response | URL> {
    let current = res;
    for (let hops = 0; hops < 10 && current.status >= 300 && current.status < 400; hops += 1) {
      const next = new URL(current.headers.get('location') ?? '', sso.issuer);
      if (next.href.startsWith(UI_REDIRECT_URI)) return next;
      current = await this.get(next.href);
    }
    return current;
  }

  private async request(url: string, init: RequestInit): Promise<Response> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(url, { ...init, redirect: 'manual', headers: { ...init.headers, cookie } });
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const at = pair.indexOf('=');
      const value = pair.slice(at + 1);
      if (value === '') this.cookies.delete(pair.slice(0, at));
      else this.cookies.set(pair.slice(0, at), value);
    }
    return res;
  }
}

/** The login form of a new authorization request by the Web UI: its URL and the browser at it. */
async function openLogin(): Promise<{ browser: Browser; formUrl: string }> {
  const browser = new Browser();
  const auth = new URL(`${sso.issuer}/auth`);
  auth.search = new URLSearchParams({
    client_id: 'temporal-ui',
    response_type: 'code',
    scope: 'openid profile email',
    redirect_uri: UI_REDIRECT_URI,
    state: 'state-1',
    nonce: 'nonce-1',
  }).toString();
  const start = await browser.get(auth.href);
  assert.equal(start.status, 303);
  const formUrl = new URL(start.headers.get('location') ?? '', sso.issuer).href;
  const form = await browser.get(formUrl);
  assert.equal(form.status, 200);
  const html = await form.text();
  assert.match(html, /<input name="username"/);
  assert.match(html, /<input name="password" type="password"/);
  assert.match(html, /<button type="submit">Sign in<\/button>/);
  return { browser, formUrl };
}

interface CodeTokens {
  access: JWTPayload;
  id: JWTPayload;
}

/** Logs `username` in through the form and exchanges the code as the Web UI does. */
async function logIn(username: string, password: string): Promise<CodeTokens> {
  const { browser, formUrl } = await openLogin();
  const back = await browser.follow(await browser.post(formUrl, { username, password }));
  assert.ok(back instanceof URL, `the login did not come back to the app (${(back as Response).status})`);
  assert.equal(back.searchParams.get('state'), 'state-1');
  const code = back.searchParams.get('code') ?? '';
  const res = await token('temporal-ui', secretOf('temporal-ui'), {
    grant_type: 'authorization_code',
    code,
    redirect_uri: UI_REDIRECT_URI,
  });
  assert.equal(res.status, 200, await res.clone().text());
  const body = (await res.json()) as { access_token: string; id_token: string };
  const id = (await jwtVerify(body.id_token, jwks, { issuer: sso.issuer, audience: 'temporal-ui' })).payload;
  return { access: await verifyAccess(body.access_token), id };
}

describe('authorization code', () => {
  test('the reader logs in: an access token with default:read, an ID token with name and email', async () => {
    const { access, id } = await logIn('reader', sso.passwords.reader!);
    assert.equal(access.sub, 'reader');
    // temporal-system:read: the Web UI's cluster-scoped reads (docs/security-access.md).
    assert.deepEqual(access.permissions, ['default:read', 'temporal-system:read']);
    assert.equal(id.sub, 'reader');
    assert.equal(id.name, 'Reader');
    assert.equal(id.email, 'reader@docs-admin.localhost');
    assert.equal(id.nonce, 'nonce-1');
  });

  test('a wrong password or an unknown user gets the form again with one error for both', async () => {
    const { browser, formUrl } = await openLogin();
    for (const [username, password] of [
      ['reader', 'wrong-password'],
      ['nobody', 'wrong-password'],
    ] as const) {
      const res = await browser.post(formUrl, { username, password });
      assert.equal(res.status, 401);
      const html = await res.text();
      assert.match(html, /Wrong username or password/);
      assert.match(html, /<button type="submit">Sign in<\/button>/);
    }
    const back = await browser.follow(
      await browser.post(formUrl, { username: 'writer', password: sso.passwords.writer! }),
    );
    assert.ok(back instanceof URL, 'the right password after wrong ones still logs in');
  });

  test('a login form over its cap (8 KB) is a 413, and the form still works after it', async () => {
    const { browser, formUrl } = await openLogin();
    const res = await browser.post(formUrl, { username: 'reader', password: 'x'.repeat(9 * 1024) });
    assert.equal(res.status, 413, await res.clone().text());
    assert.match(await res.text(), /^request body over 8192 bytes\n$/);
    const back = await browser.follow(
      await browser.post(formUrl, { username: 'reader', password: sso.passwords.reader! }),
    );
    assert.ok(back instanceof URL);
  });

  test('a user added to the file while the provider runs logs in; with no role, permissions: []', async () => {
    const late = { username: 'late', name: 'Late', email: 'late@x.test', password: hashPassword('late-password-1') };
    const text = readFileSync(sso.directoryFile, 'utf8');
    const usersEnd = text.indexOf('\napps:');
    const entry = stringify([late]).replace(/^/gm, '  ').trimEnd();
    writeFileSync(sso.directoryFile, `${text.slice(0, usersEnd)}\n${entry}${text.slice(usersEnd)}`);
    const { access, id } = await logIn('late', 'late-password-1');
    assert.equal(access.sub, 'late');
    assert.deepEqual(access.permissions, []);
    assert.equal(id.name, 'Late');
  });
});
