// The worker's sinks file (KEEPER_SINKS_FILE, YAML; JSON is YAML; its shape: docs/contract.md, "Sinks file"):
// the only places a keeper may apply a bundle. A keeper's input names one; the worker's owner decides
// what each name runs, reaches or writes.
//
// Every sink lists the domains it serves: a keeper for another domain naming it is refused as a name the
// file lacks is, so a writer cannot point one domain's keeper at another's deployment. What is held and
// when the file is read again: the same section; a change is seen by its identity, size or mtime (one stat
// per use, as the key files).
import path from 'node:path';
import { parse } from 'yaml';
import { type InlineSink, SINK_NAME_FORM, type SinkType } from '../shared/bundle-keeper';
import { hostnameProblem } from '../policies/validation/export';
import { WatchedFile } from '../config/watched-file';

export type SinkDefinition =
  | { type: 'file'; path: string; mode: number; root: string }
  | { type: 'webhook'; url: string; allowHttp: boolean; allowPrivateHosts: string[]; headersFile?: string }
  | { type: 'command'; argv: string[]; env: string[] }
  | { type: 'mirror'; dir: string; urlPrefix: string; keep: number; mode: number; root: string };

/** A sink the file holds: its definition and the domains whose keepers may apply through it (lower case). */
export type HeldSink = SinkDefinition & { domains: readonly string[] };

export interface SinkTable {
  /** The file they came from (for messages); undefined when the worker has no sinks file. */
  file: string | undefined;
  sinks: ReadonlyMap<string, HeldSink>;
  /** Sinks the file lists that the worker refuses, with why. */
  invalid: ReadonlyMap<string, string>;
}

export class SinksFileError extends Error {
  override readonly name = 'SinksFileError';
}

export const DEFAULT_SINK_MODE = 0o600;
export const DEFAULT_MIRROR_KEEP = 3;

/** Variables that hold the worker's own secrets: a command sink may not ask for them. */
const WORKER_SECRETS =
  /^(ADMIN_API_KEY.*|PAYLOAD_ENCRYPTION_KEYS?_FILE|TEMPORAL_API_KEY.*|TEMPORAL_TLS_.*|CODEC_SERVER_.*)$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const FIELDS: Record<SinkType, readonly string[]> = {
  file: ['type', 'path', 'mode'],
  webhook: ['type', 'url', 'allowHttp', 'allowPrivateHosts', 'headersFile'],
  command: ['type', 'argv', 'env'],
  mirror: ['type', 'dir', 'urlPrefix', 'keep', 'mode'],
};

const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
const isAbsoluteNormal = (p: unknown): p is string =>
  typeof p === 'string' && path.isAbsolute(p) && path.normalize(p) === p && !p.endsWith('/');

/** The allowed directory `p` lies in (or is, when `orEqual`), if any. */
function rootOf(p: string, allowedDirs: readonly string[], orEqual: boolean): string | undefined {
  return allowedDirs.find((dir) => {
    const rel = path.relative(dir, p);
    return (rel === '' && orEqual) || (rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel));
  });
}

/** A mode given as a quoted octal string ("0600"): a bare YAML 0600 would be read as decimal 600. */
function modeOf(value: unknown): number | string {
  if (value === undefined) return DEFAULT_SINK_MODE;
  if (typeof value !== 'string' || !/^0?[0-7]{3}$/.test(value))
    return 'mode must be a quoted octal string such as "0600"';
  return parseInt(value, 8);
}

function httpUrlProblem(value: unknown, field: string, allowHttp: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(String(value));
  } catch {
    return `${field} must be a URL`;
  }
  if (typeof value !== 'string' || url.username || url.password) return `${field} must be a URL without credentials`;
  if (url.protocol === 'https:' || (url.protocol === 'http:' && allowHttp)) return undefined;
  return `${field} must be https${url.protocol === 'http:' ? ' (or set allowHttp: true)' : ''}`;
}

/** One sink of the file, checked: its definition or why it is refused. */
export function checkSink(raw: unknown, allowedDirs: readonly string[]): SinkDefinition | string {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return 'a sink must be a map with a type';
  const s = raw as Record<string, unknown>;
  const type = s.type as SinkType;
  if (!Object.hasOwn(FIELDS, String(type))) return `type must be one of file, webhook, command, mirror`;
  const unknown = Object.keys(s).filter((k) => !FIELDS[type].includes(k));
  if (unknown.length > 0) return `unknown field(s) for a ${type} sink: ${unknown.join(', ')}`;
  switch (type) {
    case 'file': {
      if (!isAbsoluteNormal(s.path)) return 'path must be an absolute, normalized path';
      const root = rootOf(s.path, allowedDirs, false);
      if (!root) return `path ${s.path} is not under any of allowedDirs (${allowedDirs.join(', ') || 'none'})`;
      const mode = modeOf(s.mode);
      return typeof mode === 'string' ? mode : { type, path: s.path, mode, root };
    }
    case 'webhook': {
      if (s.allowHttp !== undefined && typeof s.allowHttp !== 'boolean') return 'allowHttp must be true or false';
      const urlProblem = httpUrlProblem(s.url, 'url', s.allowHttp === true);
      if (urlProblem) return urlProblem;
      if (s.allowPrivateHosts !== undefined && !isStringList(s.allowPrivateHosts))
        return 'allowPrivateHosts must be a list of host names or addresses';
      if (s.headersFile !== undefined && !isAbsoluteNormal(s.headersFile))
        return 'headersFile must be an absolute path';
      return {
        type,
        url: s.url as string,
        allowHttp: s.allowHttp === true,
        allowPrivateHosts: ((s.allowPrivateHosts as string[] | undefined) ?? []).map(hostKey),
        ...(s.headersFile ? { headersFile: s.headersFile as string } : {}),
      };
    }
    case 'command': {
      if (!isStringList(s.argv) || s.argv.length === 0 || s.argv[0] === '')
        return 'argv must be a non-empty list of strings (the program, then its arguments; no shell)';
      const env = s.env ?? [];
      if (!isStringList(env) || !env.every((n) => ENV_NAME.test(n))) return 'env must be a list of variable names';
      const secret = env.find((n) => WORKER_SECRETS.test(n));
      if (secret) return `env may not pass ${secret}: it is one of the worker's own secrets`;
      return { type, argv: s.argv, env };
    }
    case 'mirror': {
      if (!isAbsoluteNormal(s.dir)) return 'dir must be an absolute, normalized path';
      const root = rootOf(s.dir, allowedDirs, true);
      if (!root) return `dir ${s.dir} is not under any of allowedDirs (${allowedDirs.join(', ') || 'none'})`;
      const urlProblem = httpUrlProblem(s.urlPrefix, 'urlPrefix', true);
      if (urlProblem) return urlProblem;
      const keep = s.keep ?? DEFAULT_MIRROR_KEEP;
      if (!Number.isInteger(keep) || (keep as number) < 1) return 'keep must be an integer >= 1';
      const mode = modeOf(s.mode);
      if (typeof mode === 'string') return mode;
      return { type, dir: s.dir, urlPrefix: s.urlPrefix as string, keep: keep as number, mode, root };
    }
  }
}

/**
 * The domains a sink serves (`domains:`, exact hostnames, lower case), or why the list is refused. A
 * file from before domains has none: refused, saying what to add (docs/operations.md).
 */
export function checkDomains(value: unknown): string[] | string {
  if (value === undefined)
    return 'it lists no domains: add "domains: [<hostname>, ...]" with the domains whose keepers may apply through it';
  if (!isStringList(value) || value.length === 0) return 'domains must be a non-empty list of hostnames';
  if (value.some((d) => d.includes('*')))
    return 'domains lists exact hostnames (no wildcard such as *.example.com): name each domain';
  const problem = value.map(hostnameProblem).find((p) => p !== null);
  if (problem) return `domains: ${problem}`;
  return [...new Set(value.map((d) => d.toLowerCase()))];
}

/** One sink of the file with the domains it serves, or why it is refused (its kind's rules first). */
function checkHeldSink(raw: unknown, allowedDirs: readonly string[]): HeldSink | string {
  const isMap = typeof raw === 'object' && raw !== null && !Array.isArray(raw);
  const { domains, ...definition } = isMap ? (raw as Record<string, unknown>) : {};
  const sink = checkSink(isMap ? definition : raw, allowedDirs);
  if (typeof sink === 'string') return sink;
  const served = checkDomains(domains);
  return typeof served === 'string' ? served : { ...sink, domains: served };
}

/** A host as allowPrivateHosts and the address check compare it: lower case, IPv6 without brackets. */
export function hostKey(host: string): string {
  return host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
}

/** Parses a sinks file's text (`file` only names it in messages). */
export function parseSinksFile(text: string, file: string): SinkTable {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new SinksFileError(`${file}: not YAML or JSON (${(err as Error).message.split('\n')[0]})`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new SinksFileError(`${file}: expected a map with "sinks:" (and "allowedDirs:" for file and mirror sinks)`);
  const { sinks = {}, allowedDirs = [], ...rest } = doc as Record<string, unknown>;
  if (Object.keys(rest).length > 0) throw new SinksFileError(`${file}: unknown key(s) ${Object.keys(rest).join(', ')}`);
  if (!isStringList(allowedDirs) || !allowedDirs.every(isAbsoluteNormal))
    throw new SinksFileError(`${file}: allowedDirs must be a list of absolute, normalized directories`);
  if (typeof sinks !== 'object' || sinks === null || Array.isArray(sinks))
    throw new SinksFileError(`${file}: sinks must be a map of name to sink`);
  const held = new Map<string, HeldSink>();
  const invalid = new Map<string, string>();
  for (const [name, raw] of Object.entries(sinks)) {
    const checked = SINK_NAME_FORM.test(name)
      ? checkHeldSink(raw, allowedDirs)
      : 'the name must be 1-64 of A-Z a-z 0-9 . _ -';
    if (typeof checked === 'string') invalid.set(name, checked);
    else held.set(name, checked);
  }
  return { file, sinks: held, invalid };
}

/** The name of the sink in `table` equal to a keeper's inline sink of an earlier release, if any. */
export function equalSink(table: SinkTable, inline: InlineSink): string | undefined {
  for (const [name, def] of table.sinks) {
    const same =
      (inline.type === 'file' && def.type === 'file' && def.path === inline.path) ||
      (inline.type === 'webhook' && def.type === 'webhook' && def.url === inline.url) ||
      // A shell command line of an earlier release, allowed by the owner as sh -c <the same line>.
      (inline.type === 'command' &&
        def.type === 'command' &&
        def.argv.length === 3 &&
        /^(\/bin\/)?sh$/.test(def.argv[0]!) &&
        def.argv[1] === '-c' &&
        def.argv[2] === inline.command) ||
      (inline.type === 'mirror' &&
        def.type === 'mirror' &&
        def.dir === inline.dir &&
        def.urlPrefix === inline.urlPrefix);
    if (same) return name;
  }
  return undefined;
}

/** Why a sink was refused, as the refusals metric labels it. */
export type RefusalCode = 'unknown' | 'inline' | 'invalid' | 'domain' | 'address' | 'path' | 'changed';

export type SinkLookup = { name: string; sink: HeldSink } | { refused: string; code: RefusalCode };

/** The sink `name` of the table for a keeper of `domain`: only if it lists that domain. */
function serving(table: SinkTable, name: string, domain: string, where: string): SinkLookup {
  const sink = table.sinks.get(name)!;
  if (typeof domain === 'string' && sink.domains.includes(domain.toLowerCase())) return { name, sink };
  const shown = String(domain).slice(0, 253);
  return {
    refused: `sink "${name}" does not serve ${shown}: add ${shown} to its "domains:" in ${where} only if that deployment serves it`,
    code: 'domain',
  };
}

/**
 * A keeper's sink against the table: a name the file holds, or (`allowInline`, for keepers that ran
 * before named sinks) an inline sink equal to one it holds; either only when it lists the keeper's
 * `domain`. Everything else is refused, saying what to add to the file. Never echoes a URL (webhook
 * addresses are private).
 */
export function lookupSink(table: SinkTable, ref: unknown, allowInline: boolean, domain: string): SinkLookup {
  const where = table.file ? `${table.file} (KEEPER_SINKS_FILE)` : 'a sinks file (set KEEPER_SINKS_FILE)';
  if (typeof ref === 'string') {
    if (!SINK_NAME_FORM.test(ref))
      return { refused: `sink ${JSON.stringify(ref.slice(0, 70))} is not a sink name`, code: 'unknown' };
    if (table.sinks.has(ref)) return serving(table, ref, domain, where);
    const problem = table.invalid.get(ref);
    if (problem) return { refused: `sink "${ref}" of ${table.file} is refused: ${problem}`, code: 'invalid' };
    return { refused: `the worker holds no sink "${ref}": add it under "sinks:" in ${where}`, code: 'unknown' };
  }
  const type = typeof ref === 'object' && ref !== null ? (ref as { type?: unknown }).type : undefined;
  if (typeof type !== 'string' || !Object.hasOwn(FIELDS, type))
    return { refused: "the sink must be the name of a sink in the worker's sinks file (a string)", code: 'inline' };
  const shape = `an inline ${type} sink`;
  if (!allowInline)
    return {
      refused: `${shape} is refused: add it to ${where} under a name and start the keeper with "sink": "<name>"`,
      code: 'inline',
    };
  const name = equalSink(table, ref as InlineSink);
  if (name) return serving(table, name, domain, where);
  const same = { file: 'path', webhook: 'url', command: 'argv [sh, -c, <its command>]', mirror: 'dir and urlPrefix' };
  return {
    refused: `${shape} of an earlier release is not in the worker's sinks file: add a ${type} sink with the same ${same[type as SinkType]} to ${where} (the keeper waits and resumes then)`,
    code: 'inline',
  };
}

/**
 * The sinks file, kept fresh: read at construction (a missing or malformed file throws
 * SinksFileError), read again on use when it changed. A change that cannot be read keeps the sinks
 * read before and is reported once through onProblem.
 */
export class SinksFile extends WatchedFile<SinkTable> {
  constructor(file: string, onProblem = (message: string) => process.emitWarning(message, 'SinksFileWarning')) {
    super(file, {
      parse: parseSinksFile,
      unreadable: (path, code) => new SinksFileError(`${path}: cannot read the sinks file (${code})`),
      onProblem,
      kept: 'the sinks read before',
    });
  }
}

/** The sinks a worker holds: its file's, or none (every keeper is refused, saying to set KEEPER_SINKS_FILE). */
export interface SinkSource {
  current(): SinkTable;
}

export const NO_SINKS: SinkSource = {
  current: () => ({ file: undefined, sinks: new Map(), invalid: new Map() }),
};

/** One line for the worker's start log: names and types only (never a path, URL or argv). */
export function describeSinks(table: SinkTable): string {
  const held = [...table.sinks].map(([name, def]) => `${name} (${def.type})`);
  const refused = [...table.invalid.keys()];
  if (!table.file) return 'keeper sinks: none (KEEPER_SINKS_FILE is not set; every keeper is refused)';
  return `keeper sinks from ${table.file}: ${held.join(', ') || 'none'}${refused.length ? `; refused: ${refused.join(', ')}` : ''}`;
}
