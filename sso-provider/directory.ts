// The sign-on directory (SSO_DIRECTORY_FILE, docs/security-access.md): the people who log in through the
// provider's form, the apps that log them in (the Web UI) and the services that take client-credentials
// tokens (workers, the CLI, the cluster's setup), each with roles per namespace. Passwords are stored as
// scrypt hashes; app and service secrets live in files of their own beside the directory (mode 0600).
import { randomBytes, scrypt, scryptSync, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { z } from 'zod';
import { WatchedFile } from '../src/config/watched-file';
import { replaceSecretFile } from '../src/config/secret-file';
import { type Role, ROLES, SYSTEM_SCOPE } from '../src/shared/roles';

export class DirectoryError extends Error {
  override readonly name = 'DirectoryError';
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;
const HASH_FORM = /^scrypt\$[A-Za-z0-9_-]{16,}\$[A-Za-z0-9_-]{43,}$/;

const roles = z.record(z.string().regex(/^[A-Za-z0-9._-]+$/, 'a namespace name'), z.enum(ROLES)).default({});
const secretFile = z
  .string()
  .min(1)
  .refine((file) => !file.includes('\0'), 'a file path');

const userSchema = z.strictObject({
  username: z.string().regex(NAME, 'letters, digits and . _ @ -'),
  name: z.string().min(1),
  email: z.email(),
  password: z.string().regex(HASH_FORM, 'a scrypt hash ("scrypt$<salt>$<hash>"), never a plaintext password'),
  roles,
});
const appSchema = z.strictObject({
  clientId: z.string().regex(NAME, 'letters, digits and . _ @ -'),
  secretFile,
  redirectUris: z.array(z.url({ protocol: /^https?$/ })).min(1),
});
const serviceSchema = z.strictObject({
  clientId: z.string().regex(NAME, 'letters, digits and . _ @ -'),
  secretFile,
  roles,
});
const directorySchema = z.strictObject({
  users: z.array(userSchema).default([]),
  apps: z.array(appSchema).default([]),
  services: z.array(serviceSchema).default([]),
});

export type DirectoryUser = z.infer<typeof userSchema>;
export type DirectoryApp = z.infer<typeof appSchema>;
export type DirectoryService = z.infer<typeof serviceSchema>;
export type Directory = z.infer<typeof directorySchema>;

/** `users[1] (reader): email: ...`: the entry by position and name, then the field. */
function issueLine(data: unknown, issue: z.core.$ZodIssue): string {
  const [section, index, ...field] = issue.path;
  if (typeof section !== 'string' || typeof index !== 'number') {
    return `${issue.path.length ? `${issue.path.join('.')}: ` : ''}${issue.message}`;
  }
  const entry = (data as Record<string, unknown[]>)[section]?.[index] as Record<string, unknown> | undefined;
  const label = entry?.username ?? entry?.clientId;
  const name = typeof label === 'string' ? ` (${label})` : '';
  return `${section}[${index}]${name}: ${field.length ? `${field.join('.')}: ` : ''}${issue.message}`;
}

/** The directory of a file's text; a bad file throws one line naming the file, the entry and the field. */
export function parseDirectory(text: string, file: string): Directory {
  let data: unknown;
  try {
    data = parse(text) ?? {};
  } catch (err) {
    throw new DirectoryError(`${file}: not YAML (${(err as Error).message.split('\n', 1)[0]})`);
  }
  const result = directorySchema.safeParse(data);
  if (!result.success) throw new DirectoryError(`${file}: ${issueLine(data, result.error.issues[0]!)}`);
  const directory = result.data;
  for (const [section, ids] of [
    ['users', directory.users.map((u) => u.username)],
    ['clients', [...directory.apps, ...directory.services].map((c) => c.clientId)],
  ] as const) {
    const twice = ids.find((id, i) => ids.indexOf(id) !== i);
    if (twice !== undefined) throw new DirectoryError(`${file}: ${section}: ${twice} is listed twice`);
  }
  return directory;
}

// scrypt's cost: N=2^15 takes ~50 ms a check, enough to slow guessing, little for one login.
const SCRYPT = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
const KEY_BYTES = 32;

/** `scrypt$<salt>$<hash>` (base64url) of a password, for the directory's `password` field. */
export function hashPassword(password: string): string {
  const salt = randomBytes(16);
  const hash = scryptSync(password, salt, KEY_BYTES, SCRYPT);
  return `scrypt$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

/**
 * Whether `password` matches the stored hash, compared in constant time. Asynchronous: scrypt runs on
 * libuv's thread pool, so a login does not stall the provider's other requests.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await new Promise<Buffer>((resolve, reject) =>
    scrypt(password, Buffer.from(salt, 'base64url'), expected.length, SCRYPT, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
  return timingSafeEqual(actual, expected);
}

let noUser: string | undefined;
/** A hash to check an unknown user's password against: the answer takes as long either way. */
export function noUserHash(): string {
  noUser ??= hashPassword(randomBytes(16).toString('base64url'));
  return noUser;
}

/** The directory file, read now (a bad file throws DirectoryError) and again whenever it changed. */
export function watchDirectory(file: string, onProblem: (message: string) => void): () => Directory {
  const watched = new WatchedFile(file, {
    parse: parseDirectory,
    unreadable: (name, code, cause) => new DirectoryError(`${name}: cannot read the directory (${code})`, { cause }),
    onProblem,
    kept: 'the directory read before',
  });
  return () => watched.current();
}

/** The secret of an app or service: its secretFile, relative to the directory file's folder. */
export function clientSecret(directoryFile: string, client: { clientId: string; secretFile: string }): string {
  const file = path.resolve(path.dirname(directoryFile), client.secretFile);
  let secret: string;
  try {
    secret = readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new DirectoryError(
      `${client.clientId}: cannot read its secret file ${file} (${(err as NodeJS.ErrnoException).code ?? err})`,
    );
  }
  if (secret === '') throw new DirectoryError(`${client.clientId}: its secret file ${file} is empty`);
  return secret;
}

export interface EnsureDirectoryOptions {
  /** The cluster's namespace: the people's and services' roles are on it. */
  namespace: string;
  /** Where the Temporal Web UI takes the login's code back (its /auth/sso/callback). */
  uiRedirectUri: string;
}

/** What ensureDirectory did: the people's passwords when it made the file (shown once), else none. */
export type EnsureDirectoryResult = { created: true; passwords: Record<string, string> } | { created: false };

const newSecret = (): string => randomBytes(32).toString('base64url');

/**
 * The directory at `file`, made on first run with an admin, a writer and a reader, the Web UI app and the
 * services docs-admin-worker, docs-admin-cli (writers) and docs-admin-setup (the cluster's namespace
 * setup, an admin of the whole cluster). An existing file is left as it is.
 */
export function ensureDirectory(file: string, options: EnsureDirectoryOptions): EnsureDirectoryResult {
  if (existsSync(file)) return { created: false };
  const ns = options.namespace;
  const people: [string, string, Record<string, Role>][] = [
    ['admin', 'Admin', { [ns]: 'admin', [SYSTEM_SCOPE]: 'admin' }],
    // The Web UI lists namespaces and reads the cluster's info (cluster-scoped reads): a person needs a
    // read of the whole cluster beside their role on the namespace (docs/security-access.md).
    ['writer', 'Writer', { [ns]: 'writer', [SYSTEM_SCOPE]: 'reader' }],
    ['reader', 'Reader', { [ns]: 'reader', [SYSTEM_SCOPE]: 'reader' }],
  ];
  const passwords: Record<string, string> = {};
  const users = people.map(([username, name, userRoles]) => {
    passwords[username] = newSecret().slice(0, 20);
    const email = `${username}@docs-admin.localhost`;
    return { username, name, email, password: hashPassword(passwords[username]), roles: userRoles };
  });
  const services: DirectoryService[] = [
    { clientId: 'docs-admin-worker', secretFile: 'docs-admin-worker.secret', roles: { [ns]: 'writer' } },
    { clientId: 'docs-admin-cli', secretFile: 'docs-admin-cli.secret', roles: { [ns]: 'writer' } },
    {
      clientId: 'docs-admin-setup',
      secretFile: 'docs-admin-setup.secret',
      roles: { [ns]: 'admin', [SYSTEM_SCOPE]: 'admin' },
    },
  ];
  const apps: DirectoryApp[] = [
    { clientId: 'temporal-ui', secretFile: 'temporal-ui.secret', redirectUris: [options.uiRedirectUri] },
  ];
  mkdirSync(path.dirname(file), { recursive: true });
  for (const client of [...apps, ...services]) {
    replaceSecretFile(path.resolve(path.dirname(file), client.secretFile), `${newSecret()}\n`);
  }
  const text = stringify({ users, apps, services });
  parseDirectory(text, file);
  replaceSecretFile(file, text);
  return { created: true, passwords };
}

/**
 * Adds the service `clientId` with `roles` and a new secret file beside the directory, unless the directory
 * lists that client already (a directory made before the service existed). Returns whether it added it.
 */
export function ensureService(file: string, clientId: string, roles: Record<string, Role>): boolean {
  const directory = parseDirectory(readFileSync(file, 'utf8'), file);
  if ([...directory.apps, ...directory.services].some((c) => c.clientId === clientId)) return false;
  const service: DirectoryService = { clientId, secretFile: `${clientId}.secret`, roles };
  replaceSecretFile(path.resolve(path.dirname(file), service.secretFile), `${newSecret()}\n`);
  const text = stringify({ ...directory, services: [...directory.services, service] });
  parseDirectory(text, file);
  replaceSecretFile(file, text);
  return true;
}
