// Mutual TLS of `npm run cluster -- --tls`: a private CA, the frontend's certificate (127.0.0.1 and
// localhost) and one client certificate, made with openssl under .data/cluster/tls/ (git-ignored, never
// committed) on the first --tls run and reused after. The frontend requires a client certificate signed
// by that CA; the internode traffic stays plain (every service is on 127.0.0.1). The server reads the
// names of Temporal's server image (TEMPORAL_TLS_FRONTEND_CERT, ...: deploy/temporal/config.yaml);
// clients, the temporal CLI and the UI server read @temporalio/envconfig's TEMPORAL_TLS_* names.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CLUSTER_DATA_DIR } from './layout';

export const TLS_DIR = path.join(CLUSTER_DATA_DIR, 'tls');
/** The name every client verifies the frontend's certificate against (it is also valid for 127.0.0.1). */
export const TLS_SERVER_NAME = 'localhost';

export const TLS_FILES = {
  caCert: path.join(TLS_DIR, 'ca.pem'),
  caKey: path.join(TLS_DIR, 'ca-key.pem'),
  serverCert: path.join(TLS_DIR, 'server.pem'),
  serverKey: path.join(TLS_DIR, 'server-key.pem'),
  clientCert: path.join(TLS_DIR, 'client.pem'),
  clientKey: path.join(TLS_DIR, 'client-key.pem'),
};

const DAYS = '825';

function openssl(args: string[]): void {
  const result = spawnSync('openssl', args, { encoding: 'utf8' });
  if (result.error) throw new Error(`--tls needs openssl on PATH (${result.error.message})`);
  if (result.status !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr.trim().split('\n')[0]}`);
}

/** A key and a certificate for `subject`, signed by the CA, with the given extensions. */
function issue(name: 'server' | 'client', subject: string, extensions: string): void {
  const key = name === 'server' ? TLS_FILES.serverKey : TLS_FILES.clientKey;
  const cert = name === 'server' ? TLS_FILES.serverCert : TLS_FILES.clientCert;
  const csr = path.join(TLS_DIR, `${name}.csr`);
  const ext = path.join(TLS_DIR, `${name}.ext`);
  openssl(['req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', csr, '-subj', subject]);
  writeFileSync(ext, extensions);
  openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    TLS_FILES.caCert,
    '-CAkey',
    TLS_FILES.caKey,
    '-CAcreateserial',
    '-out',
    cert,
    '-days',
    DAYS,
    '-sha256',
    '-extfile',
    ext,
  ]);
  chmodSync(key, 0o600);
  rmSync(csr);
  rmSync(ext);
}

/** Creates the CA and both certificates unless they exist. Returns whether it made them now. */
export function ensureTlsMaterial(): boolean {
  if (Object.values(TLS_FILES).every((file) => existsSync(file))) return false;
  rmSync(TLS_DIR, { recursive: true, force: true });
  mkdirSync(TLS_DIR, { recursive: true, mode: 0o700 });
  openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    TLS_FILES.caKey,
    '-out',
    TLS_FILES.caCert,
    '-days',
    DAYS,
    '-sha256',
    '-subj',
    '/CN=docs-admin cluster CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  chmodSync(TLS_FILES.caKey, 0o600);
  // The server's certificate also serves its own system worker as a client (config.yaml's systemWorker).
  issue(
    'server',
    `/CN=${TLS_SERVER_NAME}`,
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n' +
      'extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n',
  );
  issue(
    'client',
    '/CN=docs-admin client',
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n',
  );
  return true;
}

/** What a client needs, in @temporalio/envconfig's names (the temporal CLI reads the same). */
export function clientTlsEnv(): Record<string, string> {
  return {
    TEMPORAL_TLS_CLIENT_CERT_PATH: TLS_FILES.clientCert,
    TEMPORAL_TLS_CLIENT_KEY_PATH: TLS_FILES.clientKey,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: TLS_FILES.caCert,
    TEMPORAL_TLS_SERVER_NAME: TLS_SERVER_NAME,
  };
}

/** deploy/temporal/config.yaml's TLS variables (the names of Temporal's server image). */
export function serverTlsEnv(): Record<string, string> {
  return {
    TEMPORAL_TLS_FRONTEND_CERT: TLS_FILES.serverCert,
    TEMPORAL_TLS_FRONTEND_KEY: TLS_FILES.serverKey,
    TEMPORAL_TLS_REQUIRE_CLIENT_AUTH: 'true',
    TEMPORAL_TLS_CLIENT1_CA_CERT: TLS_FILES.caCert,
    TEMPORAL_TLS_SERVER_CA_CERT: TLS_FILES.caCert,
    TEMPORAL_TLS_FRONTEND_SERVER_NAME: TLS_SERVER_NAME,
  };
}

/** deploy/temporal/ui.yaml's TLS variables (the names of Temporal's UI image). */
export function uiTlsEnv(): Record<string, string> {
  return {
    TEMPORAL_TLS_CA: TLS_FILES.caCert,
    TEMPORAL_TLS_CERT: TLS_FILES.clientCert,
    TEMPORAL_TLS_KEY: TLS_FILES.clientKey,
    TEMPORAL_TLS_SERVER_NAME: TLS_SERVER_NAME,
    TEMPORAL_TLS_ENABLE_HOST_VERIFICATION: 'true',
  };
}
