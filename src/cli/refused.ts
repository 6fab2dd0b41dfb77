// The one line for a call the Temporal server refused for want of a role (gRPC PERMISSION_DENIED; the
// server only says "Request unauthorized."): which role the command needs on which namespace, and, when
// the CLI signed in with a token it can read, who it signed in as and the role that token holds there.
import { isGrpcServiceError } from '@temporalio/client';
import { decodeJwt } from 'jose';
import { type Role, roleOn } from '../shared/roles';

/** gRPC status PERMISSION_DENIED: the server's authorizer said no. */
export const GRPC_PERMISSION_DENIED = 7;

/**
 * The role each command needs, by what the server's default authorizer checks for the calls it makes:
 * reads (describe, list, query, history) need reader; starts, signals, updates, terminations and
 * schedule changes need writer. Commands that never call the server (keygen, token) are absent.
 */
const ROLE_OF_COMMAND: Readonly<Record<string, Role>> = {
  export: 'writer',
  agent: 'writer',
  keep: 'writer',
  publish: 'writer',
  status: 'reader',
  parked: 'reader',
  resolve: 'writer',
  resend: 'writer',
  abandon: 'writer',
  'schedule create': 'writer',
  'schedule update': 'writer',
  'schedule list': 'reader',
  'schedule describe': 'reader',
  'schedule pause': 'writer',
  'schedule unpause': 'writer',
  'schedule trigger': 'writer',
  'schedule backfill': 'writer',
  'schedule delete': 'writer',
  'schedule rekey': 'writer',
  'keys in-use': 'reader',
};

/** The role `command` (its words after `docs-admin`, e.g. `schedule list`) needs, if it calls the server. */
export function roleNeededBy(command: string): Role | undefined {
  return Object.hasOwn(ROLE_OF_COMMAND, command) ? ROLE_OF_COMMAND[command] : undefined;
}

/** Whether `err`, or an error it wraps, is the server's PERMISSION_DENIED. */
export function isPermissionDenied(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 8; depth += 1) {
    if (isGrpcServiceError(e) && e.code === GRPC_PERMISSION_DENIED) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

export interface SignedIn {
  sub: string;
  role: Role | undefined;
}

/**
 * Who a bearer token says the CLI is, and its role on `namespace`: the JWT's payload read without
 * checking its signature (the server checked it; this only words a message). Undefined for a token that
 * is not a JWT (a plain API key) or has no `sub`.
 */
export function signedInAs(token: string | undefined, namespace: string): SignedIn | undefined {
  if (!token) return undefined;
  try {
    const claims = decodeJwt(token);
    if (typeof claims.sub !== 'string' || claims.sub === '') return undefined;
    // One line, whatever the token holds.
    return { sub: claims.sub.replace(/\p{Cc}/gu, '?'), role: roleOn(claims.permissions, namespace) };
  } catch {
    return undefined;
  }
}

/** `docs-admin <command>: the Temporal server refused it: <command> needs the <role> role on namespace <ns>`. */
export function refusedLine(command: string, namespace: string, who: SignedIn | undefined): string {
  const needed = roleNeededBy(command);
  const why = needed
    ? `${command} needs the ${needed} role on namespace ${namespace}`
    : `${command} needs a role on namespace ${namespace}`;
  const as = who ? ` (signed in as ${who.sub}, role ${who.role ?? 'none'})` : '';
  return `docs-admin ${command}: the Temporal server refused it: ${why}${as}`;
}
