// The one-shot `secrets-init` job of docker-compose.yml (`node dist/deploy/secrets/compose-secrets.js <folder>`,
// as root in the image's `secrets` target, which has openssl): what the closed deployment needs, made on
// the first `up` and kept after, each service's part in a folder of its own, so that a service mounts only
// what it uses and never another's credential:
//   ca/          the private CA; its key signs every certificate and no service mounts it
//   sso/         the sign-on directory and every client's secret: the OpenID provider's only
//   payload/     the payload key file: the worker, the CLI, the codec server and the webhook receiver
//   <service>/   its certificate and key, the CA's certificate, its own client secret (SERVICE_SECRETS)
// A client secret is copied from sso/ into its service's folder once (a secret of another IdP put there
// stays). The flat files of earlier releases (payload-keys, codec-token, codec-tls/) move to their folders.
// Folders 0700 and files 0600, owned by uid 1000: the user of this image and of Temporal's images.
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { generateKeyLine, generateToken } from '../../src/codec';
import { runAsEntryPoint } from '../../src/process/lifecycle';
import { DEFAULT_NAMESPACE } from '../../src/shared/defaults';
import { clientSecret, ensureDirectory, ensureService, parseDirectory } from '../../sso-provider/directory';
import { type CertificateRequest, caFiles, ensureCertificates } from './certificates';

/** The file names inside a service's folder (mounted at SERVICE_SECRETS_MOUNT). */
export const SERVICE_FILES = {
  ca: 'ca.pem',
  /** The Temporal frontend's, and the codec server's HTTPS certificate (replace it with one browsers trust). */
  serverCert: 'server.pem',
  serverKey: 'server-key.pem',
  clientCert: 'client.pem',
  clientKey: 'client-key.pem',
  /** The service's client-credentials secret (of the bundled provider, or of your IdP). */
  oidcSecret: 'oidc-client.secret',
  codecToken: 'codec-token',
  /** The setup's access token, fetched by temporal-setup-token. */
  setupToken: 'token',
} as const;

/** Where every service finds its own folder. */
export const SERVICE_SECRETS_MOUNT = '/run/docs-admin/secrets';
export const PAYLOAD_KEYS_FILE = 'payload-keys';

export interface ServiceSecrets {
  /** A certificate of the compose CA: Temporal's frontend ('server'), a client of it, or HTTPS. */
  certificate: 'server' | 'client' | 'https';
  /** The client id of the bundled directory whose secret it signs in with. */
  oidcClient?: string;
  codecToken?: true;
}

/** Each service of docker-compose.yml that holds a secret of its own (its folder is named after it). */
export const SERVICE_SECRETS: Record<string, ServiceSecrets> = {
  temporal: { certificate: 'server' },
  'temporal-ui': { certificate: 'client', oidcClient: 'temporal-ui' },
  'temporal-setup': { certificate: 'client', oidcClient: 'docs-admin-setup' },
  worker: { certificate: 'client', oidcClient: 'docs-admin-worker' },
  cli: { certificate: 'client', oidcClient: 'docs-admin-cli' },
  webhooks: { certificate: 'client', oidcClient: 'docs-admin-webhooks' },
  'codec-server': { certificate: 'https', codecToken: true },
};

/** The names clients reach the frontend by: the compose network's, and the published port on the host. */
export const TEMPORAL_SERVER_NAMES = ['temporal', 'localhost', '127.0.0.1'];
/** The codec server as the browser and the host's CLI reach it. */
export const CODEC_SERVER_NAMES = ['localhost', '127.0.0.1'];
/** The webhook receiver's own client (the directory of earlier releases lacks it): it only signals keepers. */
export const WEBHOOKS_CLIENT = 'docs-admin-webhooks';

export interface ComposeSecretsOptions {
  namespace: string;
  uiRedirectUri: string;
  log: (line: string) => void;
  /** chown everything to this user (the job runs as root); absent: leave the owner. */
  owner?: { uid: number; gid: number };
}

function writeOnce(file: string, text: () => string, log: (line: string) => void): void {
  if (existsSync(file)) return;
  writeFileSync(file, `${text()}\n`, { mode: 0o600, flag: 'wx' });
  log(`made ${file}`);
}

/** The files of the flat layout of earlier releases, moved where their services read them now. */
function migrate(root: string, log: (line: string) => void): void {
  const moves: [string, string][] = [
    [PAYLOAD_KEYS_FILE, path.join('payload', PAYLOAD_KEYS_FILE)],
    ['codec-token', path.join('codec-server', SERVICE_FILES.codecToken)],
    [path.join('codec-tls', 'cert.pem'), path.join('codec-server', SERVICE_FILES.serverCert)],
    [path.join('codec-tls', 'key.pem'), path.join('codec-server', SERVICE_FILES.serverKey)],
  ];
  for (const [from, to] of moves) {
    const [source, target] = [path.join(root, from), path.join(root, to)];
    if (!existsSync(source) || !statSync(source).isFile() || existsSync(target)) continue;
    mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
    renameSync(source, target);
    log(`moved ${source} to ${target}`);
  }
}

function certificateRequest(root: string, service: string, certificate: ServiceSecrets['certificate']) {
  const dir = path.join(root, service);
  if (certificate === 'client') return { dir, name: 'client', commonName: `docs-admin ${service}` };
  const serverNames = certificate === 'server' ? TEMPORAL_SERVER_NAMES : CODEC_SERVER_NAMES;
  return { dir, name: 'server', commonName: serverNames[0]!, serverNames };
}

/**
 * The CA and the services' certificates (a new CA reissues Temporal's), the CA's certificate in every
 * folder. The HTTPS certificate is only made when absent: one browsers trust may have replaced it.
 */
function certificates(root: string, log: (line: string) => void): void {
  const ca = { dir: path.join(root, 'ca'), commonName: 'docs-admin compose CA' };
  const requests = (https: boolean): CertificateRequest[] =>
    Object.entries(SERVICE_SECRETS)
      .filter(([, { certificate }]) => (certificate === 'https') === https)
      .map(([service, { certificate }]) => certificateRequest(root, service, certificate));
  for (const file of [...ensureCertificates(ca, requests(false)), ...ensureCertificates(ca, requests(true))])
    log(`made ${file}`);
  const caCert = readFileSync(caFiles(ca).cert);
  for (const service of Object.keys(SERVICE_SECRETS)) {
    const file = path.join(root, service, SERVICE_FILES.ca);
    if (!existsSync(file) || !readFileSync(file).equals(caCert)) writeFileSync(file, caCert, { mode: 0o600 });
  }
}

/** The directory (people's passwords printed on its first run), the webhook receiver's client in it. */
function signOn(root: string, options: ComposeSecretsOptions): { clientId: string; secretFile: string }[] {
  const file = path.join(root, 'sso', 'directory.yaml');
  const made = ensureDirectory(file, { namespace: options.namespace, uiRedirectUri: options.uiRedirectUri });
  if (made.created) {
    options.log(`made ${file}: the people of the directory and their passwords (shown this once):`);
    for (const [user, password] of Object.entries(made.passwords)) options.log(`  ${user.padEnd(8)} ${password}`);
  }
  if (ensureService(file, WEBHOOKS_CLIENT, { [options.namespace]: 'writer' }))
    options.log(`added the service ${WEBHOOKS_CLIENT} to ${file}`);
  const directory = parseDirectory(readFileSync(file, 'utf8'), file);
  return [...directory.apps, ...directory.services];
}

/** Each service's client secret, copied from the directory once. */
function clientSecrets(
  root: string,
  clients: { clientId: string; secretFile: string }[],
  log: (line: string) => void,
): void {
  const directoryFile = path.join(root, 'sso', 'directory.yaml');
  for (const [service, { oidcClient }] of Object.entries(SERVICE_SECRETS)) {
    const target = path.join(root, service, SERVICE_FILES.oidcSecret);
    if (!oidcClient || existsSync(target)) continue;
    const client = clients.find((c) => c.clientId === oidcClient);
    if (!client) {
      log(`${service}: ${oidcClient} is not in ${directoryFile}: put its secret in ${target}`);
      continue;
    }
    writeFileSync(target, `${clientSecret(directoryFile, client)}\n`, { mode: 0o600, flag: 'wx' });
    log(`made ${target} (${oidcClient})`);
  }
}

/** Folders 0700, files 0600, all of them the services' user's. */
function restrict(dir: string, owner: ComposeSecretsOptions['owner']): void {
  chmodSync(dir, 0o700);
  if (owner) chownSync(dir, owner.uid, owner.gid);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) restrict(file, owner);
    else if (entry.isFile()) {
      chmodSync(file, 0o600);
      if (owner) chownSync(file, owner.uid, owner.gid);
    }
  }
}

/** Everything of the layout above, below `root`; what exists is kept. */
export function ensureComposeSecrets(root: string, options: ComposeSecretsOptions): void {
  const { log } = options;
  mkdirSync(root, { recursive: true, mode: 0o700 });
  migrate(root, log);
  for (const folder of ['payload', ...Object.keys(SERVICE_SECRETS)])
    mkdirSync(path.join(root, folder), { recursive: true, mode: 0o700 });
  writeOnce(path.join(root, 'payload', PAYLOAD_KEYS_FILE), generateKeyLine, log);
  writeOnce(path.join(root, 'codec-server', SERVICE_FILES.codecToken), generateToken, log);
  certificates(root, log);
  clientSecrets(root, signOn(root, options), log);
  restrict(root, options.owner);
}

if (require.main === module)
  runAsEntryPoint('compose-secrets', async () => {
    const root = process.argv[2];
    if (!root) throw new Error('usage: node dist/deploy/secrets/compose-secrets.js <secrets folder>');
    ensureComposeSecrets(root, {
      namespace: process.env.TEMPORAL_NAMESPACE || DEFAULT_NAMESPACE,
      uiRedirectUri: process.env.TEMPORAL_AUTH_CALLBACK_URL || 'http://127.0.0.1:8080/auth/sso/callback',
      log: (line) => console.log(line),
      ...(process.getuid?.() === 0 ? { owner: { uid: 1000, gid: 1000 } } : {}),
    });
    console.log(`secrets ready in ${root}`);
  });
