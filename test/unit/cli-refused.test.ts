// test-lane: parallel
// The CLI's one line when the Temporal server refuses a call for want of a role (gRPC PERMISSION_DENIED):
// the role each command needs, the signed-in identity read from the token, and runCli's line and exit
// code (in process: the connection fails as a server with the JWT authorizer fails it).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Command } from 'commander';
import { SignJWT } from 'jose';
import { isPermissionDenied, refusedLine, roleNeededBy, signedInAs } from '../../src/cli/refused';
import { buildProgram, runCli } from '../../src/starter';
import { permissionsFor, type Role } from '../../src/shared/roles';

/** The error @grpc/grpc-js raises for status 7, as the server's authorizer answers. */
const permissionDenied = () =>
  Object.assign(new Error('7 PERMISSION_DENIED: Request unauthorized.'), {
    code: 7,
    details: 'Request unauthorized.',
    metadata: {},
  });

const jwt = (sub: string | undefined, roles: Record<string, Role>) => {
  const token = new SignJWT({ permissions: permissionsFor(roles) }).setProtectedHeader({ alg: 'HS256' });
  return (sub === undefined ? token : token.setSubject(sub)).sign(new Uint8Array(32).fill(1));
};

/** Every command with an action, by its words after `docs-admin`. */
function leafCommands(command: Command, prefix: string[] = []): string[] {
  return command.commands.flatMap((sub) => {
    const words = [...prefix, sub.name()];
    return sub.commands.length ? leafCommands(sub, words) : [words.join(' ')];
  });
}

describe('the role a command needs', () => {
  test('every command that calls the server has one; keygen and token call none', () => {
    const io = { stdout: { write: () => true }, stderr: { write: () => true }, env: {} };
    const commands = leafCommands(buildProgram(io, () => Promise.reject(new Error('no'))));
    assert.ok(commands.includes('schedule list') && commands.includes('keys in-use'), commands.join(', '));
    for (const command of commands)
      if (command !== 'keygen' && command !== 'token')
        assert.ok(roleNeededBy(command), `${command} has no role in the table`);
    assert.equal(roleNeededBy('keygen'), undefined);
    assert.equal(roleNeededBy('token'), undefined);
    assert.equal(roleNeededBy('toString'), undefined);
  });

  test('reads need reader; starts, signals, updates and schedule changes need writer', () => {
    for (const command of ['status', 'parked', 'schedule list', 'schedule describe', 'keys in-use'])
      assert.equal(roleNeededBy(command), 'reader', command);
    for (const command of ['export', 'agent', 'keep', 'publish', 'resolve', 'resend', 'abandon'])
      assert.equal(roleNeededBy(command), 'writer', command);
    for (const command of ['create', 'update', 'delete', 'pause', 'unpause', 'trigger', 'backfill', 'rekey'])
      assert.equal(roleNeededBy(`schedule ${command}`), 'writer', command);
  });
});

describe('the refusal line', () => {
  test('names the command, the role and the namespace, and who signed in with which role', async () => {
    assert.equal(
      refusedLine('export', 'default', undefined),
      'docs-admin export: the Temporal server refused it: export needs the writer role on namespace default',
    );
    const reader = signedInAs(await jwt('alice', { default: 'reader' }), 'default');
    assert.deepEqual(reader, { sub: 'alice', role: 'reader' });
    assert.equal(
      refusedLine('schedule create', 'default', reader),
      'docs-admin schedule create: the Temporal server refused it: schedule create needs the writer role on ' +
        'namespace default (signed in as alice, role reader)',
    );
    const elsewhere = signedInAs(await jwt('bob', { docs: 'admin' }), 'default');
    assert.match(
      refusedLine('status', 'default', elsewhere),
      /needs the reader role .*\(signed in as bob, role none\)$/,
    );
    assert.equal(signedInAs('a-plain-api-key', 'default'), undefined, 'a plain API key names nobody');
    assert.equal(signedInAs(await jwt(undefined, { default: 'reader' }), 'default'), undefined);
    assert.equal(signedInAs(await jwt('eve\nforged line', {}), 'default')?.sub, 'eve?forged line');
  });

  test('PERMISSION_DENIED is found in the cause chain, other codes are not it', () => {
    assert.ok(isPermissionDenied(permissionDenied()));
    assert.ok(isPermissionDenied(new Error('wrapped', { cause: permissionDenied() })));
    assert.equal(isPermissionDenied(Object.assign(permissionDenied(), { code: 14 })), false);
    assert.equal(isPermissionDenied(new Error('Request unauthorized.')), false);
  });

  test('runCli prints the one line and exits 1', async () => {
    let stderr = '';
    const token = await jwt('carol', { default: 'reader' });
    const code = await runCli(
      ['schedule', 'delete', 'export:docs.example.com'],
      {
        stdout: { write: () => true },
        stderr: { write: (s: string) => ((stderr += s), true) },
        env: { TEMPORAL_API_KEY: token },
      },
      () => Promise.reject(permissionDenied()),
    );
    assert.equal(code, 1);
    assert.equal(
      stderr,
      'docs-admin schedule delete: the Temporal server refused it: schedule delete needs the writer role on ' +
        'namespace default (signed in as carol, role reader)\n',
    );
    assert.ok(!stderr.includes(token));
  });
});
