// Where a bundle link may be downloaded from. A link arrives in an answer of the admin API (or a
// workflow's history), so it names a host; the worker's owner decides which hosts are fetched: the admin
// API's own (its host and port: the emulator serves bundles itself) and those listed in
// BUNDLE_ALLOWED_HOSTS. Every other link is refused before any connection is made. Pure.

/** One allowed host: `storage.example.com`, `storage.example.com:9000`, `*.example.com`, `[fd00::1]:9000`. */
export interface HostRule {
  /** Lower case, IPv6 without brackets; for a wildcard, the domain after `*.`. */
  host: string;
  /** A wildcard: any name below `host` (not `host` itself). */
  subdomains: boolean;
  /** Undefined: the link scheme's default port (80 for http, 443 for https). */
  port?: number;
}

const ENTRY = /^(\*\.)?(\[[0-9a-f:.]+\]|[^\s:/?#@[\]*]+)(?::(\d{1,5}))?$/i;

const unbracket = (host: string): string => host.replace(/^\[(.*)\]$/, '$1');

const defaultPort = (protocol: string): number => (protocol === 'https:' ? 443 : 80);

/** A host as links spell it, normalized the way a link's URL normalizes its own (case, IDN, IPv4 forms). */
function normalHost(host: string): string | undefined {
  try {
    return unbracket(new URL(`http://${host}/`).hostname);
  } catch {
    return undefined;
  }
}

const isAddress = (host: string): boolean => host.includes(':') || /^[\d.]+$/.test(host);

/** Parses one entry of BUNDLE_ALLOWED_HOSTS; throws with the reason. */
export function parseHostRule(text: string): HostRule {
  const match = ENTRY.exec(text.trim());
  if (!match) throw new Error(`"${text}" is not host, host:port or *.domain (a host, not a URL)`);
  const [, wildcard, rawHost, rawPort] = match;
  const host = normalHost(rawHost!);
  if (!host) throw new Error(`"${text}" is not a valid host name`);
  const port = rawPort === undefined ? undefined : Number(rawPort);
  if (port !== undefined && (port < 1 || port > 65535)) throw new Error(`"${text}": port must be 1-65535`);
  if (wildcard && (isAddress(host) || host.split('.').length < 2))
    throw new Error(`"${text}": a wildcard needs a domain of two labels or more (*.example.com)`);
  return { host, subdomains: Boolean(wildcard), ...(port !== undefined ? { port } : {}) };
}

/** BUNDLE_ALLOWED_HOSTS: entries separated by commas or white space. */
export function parseHostRules(text: string): HostRule[] {
  return text
    .split(/[\s,]+/)
    .filter(Boolean)
    .map(parseHostRule);
}

/** The admin API's own host and port (ADMIN_API_URL), first of the rules. */
export function bundleHostRules(adminApiUrl: string, listed: readonly HostRule[]): HostRule[] {
  const url = new URL(adminApiUrl);
  const own = { host: unbracket(url.hostname), subdomains: false, port: Number(url.port) || defaultPort(url.protocol) };
  return [own, ...listed];
}

function allows(rule: HostRule, url: URL): boolean {
  const host = unbracket(url.hostname);
  const hostMatches = rule.subdomains ? host.endsWith(`.${rule.host}`) : host === rule.host;
  return hostMatches && (rule.port ?? defaultPort(url.protocol)) === (Number(url.port) || defaultPort(url.protocol));
}

/** Why `link` may not be fetched under `rules`, naming its host and port only (never its path or query), or undefined. */
export function bundleLinkProblem(link: string, rules: readonly HostRule[]): string | undefined {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    return 'the link is not a URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `the link's scheme ${url.protocol} is not http(s)`;
  if (rules.some((rule) => allows(rule, url))) return undefined;
  return `host ${url.host} is neither the admin API's nor listed in BUNDLE_ALLOWED_HOSTS`;
}

/**
 * Hosts that may resolve to a loopback, private or link-local address: the ones named exactly (the
 * owner's own storage, the emulator on loopback). A wildcard covers names its owner never saw (some
 * services resolve `169.254.169.254.example.net` to that address), so those must resolve to public ones.
 */
export function privateBundleHosts(rules: readonly HostRule[]): string[] {
  return rules.filter((rule) => !rule.subdomains).map((rule) => rule.host);
}
