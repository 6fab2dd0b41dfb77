// Sign-on roles (docs/security-access.md) and the `permissions` claim they become in an access token.
// The Temporal server's default claim mapper reads `<namespace>:<read|write|admin>` entries; the
// namespace `temporal-system` stands for the whole cluster. The codec server reads the same claim.

export const ROLES = ['reader', 'writer', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** The claim the provider writes and the server and the codec server read. */
export const PERMISSIONS_CLAIM = 'permissions';
/** The permission scope of the whole cluster (Temporal's primitives.SystemLocalNamespace). */
export const SYSTEM_SCOPE = 'temporal-system';
/** The `aud` of access tokens for Temporal (server, codec server): the provider's one resource. */
export const DEFAULT_TOKEN_AUDIENCE = 'urn:docs-admin:temporal';

const PERMISSION_OF: Record<Role, string> = { reader: 'read', writer: 'write', admin: 'admin' };
// A Map, not an object: a claim value is the token's text, and `default:constructor` must find nothing.
const ROLE_OF: ReadonlyMap<string, Role> = new Map([
  ['read', 'reader'],
  ['write', 'writer'],
  ['admin', 'admin'],
]);
const RANK: Record<Role, number> = { reader: 1, writer: 2, admin: 3 };

/** `{default: 'writer'}` -> `['default:write']`: the claim for roles given per namespace. */
export function permissionsFor(roles: Readonly<Record<string, Role>>): string[] {
  return Object.entries(roles).map(([namespace, role]) => `${namespace}:${PERMISSION_OF[role]}`);
}

/**
 * The highest role a `permissions` claim gives on `namespace` (a cluster-wide entry counts for every
 * namespace), or undefined for none. Entries of another shape are ignored, as the server ignores them.
 */
export function roleOn(permissions: unknown, namespace: string): Role | undefined {
  if (!Array.isArray(permissions)) return undefined;
  let best: Role | undefined;
  for (const entry of permissions) {
    if (typeof entry !== 'string') continue;
    const at = entry.lastIndexOf(':');
    const scope = entry.slice(0, at);
    const role = ROLE_OF.get(entry.slice(at + 1));
    if (at <= 0 || role === undefined || (scope !== namespace && scope !== SYSTEM_SCOPE)) continue;
    if (best === undefined || RANK[role] > RANK[best]) best = role;
  }
  return best;
}

/** Whether `role` is at least `needed` (an admin may do what a writer may, a writer what a reader may). */
export function roleCovers(role: Role | undefined, needed: Role): boolean {
  return role !== undefined && RANK[role] >= RANK[needed];
}
