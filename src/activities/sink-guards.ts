// What a sink of the worker's file, or a bundle download, may reach and write (the ranges and paths
// refused: docs/contract.md, "Sinks file" and "Bundle downloads"), checked where it happens: a host in the
// DNS lookup its connection uses, so a name that resolves differently between a check and the connect
// gains nothing; a path on every component below its allowed directory and on the file itself.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { Agent } from 'undici';
import { type SinkDefinition, hostKey } from './sinks-file';

const SPECIAL = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, with the cloud metadata address 169.254.169.254
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  SPECIAL.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7], // unique local, with fd00:ec2::254 (metadata)
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
  ['2001:db8::', 32],
] as const)
  SPECIAL.addSubnet(net, bits, 'ipv6');

/** Loopback, private, link-local, metadata or another address no webhook should reach by default. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return SPECIAL.check(address, 'ipv4');
  if (family !== 6) return true; // not an address: refuse
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return SPECIAL.check(mapped[1]!, 'ipv4');
  return SPECIAL.check(address, 'ipv6');
}

export class AddressRefused extends Error {
  override readonly name = 'AddressRefused';
  readonly code = 'ESINKADDRESS';
}

/** How a webhook sink allows a private host (the default); a bundle download says its own. */
const SINK_HINT = "list the host under the sink's allowPrivateHosts to allow it";

/** Why `address` (which `host` resolved to) may not be reached, or undefined. */
export function addressProblem(
  host: string,
  address: string,
  allowPrivateHosts: readonly string[],
  hint = SINK_HINT,
): string | undefined {
  if (!isPrivateAddress(address)) return undefined;
  if (allowPrivateHosts.includes(hostKey(host)) || allowPrivateHosts.includes(hostKey(address))) return undefined;
  return `${hostKey(host)} resolves to ${address}, a loopback, private, link-local or metadata address (${hint})`;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A dns.lookup for net/tls.connect that refuses addresses the sink may not reach. */
export function guardedLookup(allowPrivateHosts: readonly string[], hint = SINK_HINT) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      for (const { address } of addresses) {
        const problem = addressProblem(hostname, address, allowPrivateHosts, hint);
        if (problem) return callback(new AddressRefused(problem), []);
      }
      if (options.all) return callback(null, addresses);
      const [first] = addresses;
      callback(null, first!.address, first!.family);
    });
  };
}

/**
 * An undici dispatcher for requests to `url` that connects only to addresses `allowPrivateHosts` permits
 * (guardedLookup, in the connection itself). connect() does not look an address literal up, so a literal
 * is checked here: throws AddressRefused. Close it when done. undici follows no redirect with it.
 */
export function guardedAgent(
  url: string,
  allowPrivateHosts: readonly string[],
  { hint = SINK_HINT, connectTimeoutMs = 30_000 }: { hint?: string; connectTimeoutMs?: number } = {},
): Agent {
  const host = hostKey(new URL(url).hostname);
  const literal = isIP(host) ? addressProblem(host, host, allowPrivateHosts, hint) : undefined;
  if (literal) throw new AddressRefused(literal);
  return new Agent({ connect: { lookup: guardedLookup(allowPrivateHosts, hint), timeout: connectTimeoutMs } });
}

/** The AddressRefused a request through guardedAgent failed with (undici wraps it as the cause), if any. */
export function addressRefusal(err: unknown): AddressRefused | undefined {
  for (let at = err, depth = 0; at instanceof Error && depth < 5; at = at.cause, depth++)
    if (at instanceof AddressRefused) return at;
  return undefined;
}

/** Every address `url`'s host stands for, checked (an address literal is not looked up by connect). */
export async function checkWebhookHost(url: string, allowPrivateHosts: readonly string[]): Promise<string | undefined> {
  const host = hostKey(new URL(url).hostname);
  const addresses = isIP(host)
    ? [host]
    : await new Promise<string[]>((resolve) =>
        dnsLookup(host, { all: true }, (err, found) => resolve(err ? [] : found.map((a) => a.address))),
      );
  // Not resolvable now: no refusal (a DNS hiccup is no policy); the connect fails, retryably.
  if (addresses.length === 0) return undefined;
  for (const address of addresses) {
    const problem = addressProblem(host, address, allowPrivateHosts);
    if (problem) return problem;
  }
  return undefined;
}

/**
 * Why `target` (a file, or with `isDir` a directory) may not be written, or undefined: a symbolic
 * link anywhere between `root` (the allowed directory) and it, or as it. Missing parts are fine
 * (they are created as real directories).
 */
export async function pathProblem(root: string, target: string, isDir: boolean): Promise<string | undefined> {
  const realRoot = await fsp.realpath(root).catch(() => undefined);
  if (!realRoot) return `allowed directory ${root} does not exist`;
  let at = root;
  const parts = path.relative(root, target).split(path.sep).filter(Boolean);
  for (const [i, part] of parts.entries()) {
    at = path.join(at, part);
    const stat = await fsp.lstat(at).catch(() => undefined);
    if (!stat) return undefined;
    if (stat.isSymbolicLink()) return `${at} is a symbolic link: refused (sinks never write through one)`;
    const last = i === parts.length - 1;
    if ((!last || isDir) && !stat.isDirectory()) return `${at} is not a directory`;
    if (last && !isDir && !stat.isFile()) return `${at} is not a regular file`;
  }
  return undefined;
}

/** What keeps a sink of the file from being used now (a symbolic link in its path, a private address). */
export async function sinkProblem(
  sink: SinkDefinition,
): Promise<{ problem: string; code: 'address' | 'path' } | undefined> {
  let problem: string | undefined;
  switch (sink.type) {
    case 'file':
      problem = await pathProblem(sink.root, sink.path, false);
      return problem ? { problem, code: 'path' } : undefined;
    case 'mirror':
      problem = await pathProblem(sink.root, sink.dir, true);
      return problem ? { problem, code: 'path' } : undefined;
    case 'webhook':
      problem = await checkWebhookHost(sink.url, sink.allowPrivateHosts);
      return problem ? { problem, code: 'address' } : undefined;
    case 'command':
      return undefined;
  }
}
