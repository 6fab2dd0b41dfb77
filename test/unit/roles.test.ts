// test-lane: parallel
// Roles and the permissions claim: what the provider writes is what the server and the codec server read.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { permissionsFor, roleCovers, roleOn } from '../../src/shared/roles';

test('roles become Temporal permissions per namespace', () => {
  assert.deepEqual(permissionsFor({ default: 'reader' }), ['default:read']);
  assert.deepEqual(permissionsFor({ default: 'admin', 'temporal-system': 'admin' }), [
    'default:admin',
    'temporal-system:admin',
  ]);
});

test('roleOn reads the highest role on a namespace, cluster-wide entries included', () => {
  assert.equal(roleOn(['default:read', 'default:write'], 'default'), 'writer');
  assert.equal(roleOn(['other:admin'], 'default'), undefined);
  assert.equal(roleOn(['temporal-system:read', 'default:write'], 'default'), 'writer');
  assert.equal(roleOn(['temporal-system:admin'], 'default'), 'admin');
  assert.equal(roleOn(['default:worker', 'default', ':read', 7], 'default'), undefined);
  assert.equal(roleOn('default:admin', 'default'), undefined);
  assert.equal(roleOn(undefined, 'default'), undefined);
});

test("a role named after an Object prototype property is no role (the claim is the token's text)", () => {
  for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf'])
    for (const scope of ['default', 'temporal-system'])
      assert.equal(roleOn([`${scope}:${name}`], 'default'), undefined, `${scope}:${name}`);
  // Beside a real role it changes nothing; a namespace of such a name is compared as text, like any other.
  assert.equal(roleOn(['default:constructor', 'default:read', 'default:__proto__'], 'default'), 'reader');
  assert.equal(roleOn(['constructor:read'], 'constructor'), 'reader');
  assert.equal(roleOn(['constructor:read'], 'default'), undefined);
  assert.equal(roleOn(['__proto__:admin'], '__proto__'), 'admin');
});

test('roleCovers: admin covers writer covers reader, no role covers nothing', () => {
  assert.equal(roleCovers('admin', 'writer'), true);
  assert.equal(roleCovers('writer', 'reader'), true);
  assert.equal(roleCovers('reader', 'writer'), false);
  assert.equal(roleCovers(undefined, 'reader'), false);
});
