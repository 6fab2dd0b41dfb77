// A private CA and the certificates it signs, made with openssl: the mutual TLS of `npm run cluster -- --tls`
// (scripts/cluster/tls.ts) and of docker-compose.yml (its one-shot secrets job, compose-secrets.ts). A
// certificate is `<dir>/<name>.pem` with its key `<name>-key.pem` (mode 0600); a server's is valid for its
// DNS names and IP addresses and also as a client (Temporal's system worker calls the frontend with it).
// Made once: existing files are kept, and a new CA reissues every certificate (the old ones would not
// verify against it).
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';

export interface CertificateAuthority {
  /** Holds ca.pem and ca-key.pem (0700: the key signs every certificate). */
  dir: string;
  commonName: string;
}

export interface CertificateRequest {
  dir: string;
  name: string;
  commonName: string;
  /** A server certificate for these DNS names and IP addresses; absent: a client certificate. */
  serverNames?: string[];
}

export const caFiles = (ca: CertificateAuthority) => ({
  cert: path.join(ca.dir, 'ca.pem'),
  key: path.join(ca.dir, 'ca-key.pem'),
});

export const certificateFiles = (request: Pick<CertificateRequest, 'dir' | 'name'>) => ({
  cert: path.join(request.dir, `${request.name}.pem`),
  key: path.join(request.dir, `${request.name}-key.pem`),
});

const DAYS = '825';

function openssl(args: string[]): void {
  const result = spawnSync('openssl', args, { encoding: 'utf8' });
  if (result.error) throw new Error(`certificates need openssl on PATH (${result.error.message})`);
  if (result.status !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr.trim().split('\n')[0]}`);
}

function makeCa(ca: CertificateAuthority): void {
  const files = caFiles(ca);
  mkdirSync(ca.dir, { recursive: true, mode: 0o700 });
  openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    files.key,
    '-out',
    files.cert,
    '-days',
    DAYS,
    '-sha256',
    '-subj',
    `/CN=${ca.commonName}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  chmodSync(files.key, 0o600);
}

function extensions(request: CertificateRequest): string {
  const base = 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n';
  if (!request.serverNames) return `${base}extendedKeyUsage=clientAuth\n`;
  const names = request.serverNames.map((n) => (isIP(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
  return `${base}extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=${names}\n`;
}

function issue(ca: CertificateAuthority, request: CertificateRequest): void {
  const { cert, key } = certificateFiles(request);
  const csr = `${cert}.csr`;
  const ext = `${cert}.ext`;
  mkdirSync(request.dir, { recursive: true, mode: 0o700 });
  try {
    openssl([
      'req',
      '-new',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      csr,
      '-subj',
      `/CN=${request.commonName}`,
    ]);
    writeFileSync(ext, extensions(request));
    const signer = caFiles(ca);
    openssl([
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      signer.cert,
      '-CAkey',
      signer.key,
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
  } finally {
    rmSync(csr, { force: true });
    rmSync(ext, { force: true });
  }
}

/** The CA and every requested certificate, each made unless it exists. Returns the files made now. */
export function ensureCertificates(ca: CertificateAuthority, requests: CertificateRequest[]): string[] {
  const made: string[] = [];
  const authority = caFiles(ca);
  const newCa = !existsSync(authority.cert) || !existsSync(authority.key);
  if (newCa) {
    rmSync(authority.cert, { force: true });
    makeCa(ca);
    made.push(authority.cert);
  }
  for (const request of requests) {
    const { cert, key } = certificateFiles(request);
    if (!newCa && existsSync(cert) && existsSync(key)) continue;
    issue(ca, request);
    made.push(cert);
  }
  return made;
}
