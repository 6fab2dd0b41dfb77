// test-lane: parallel
// The secrets job of docker-compose.yml (deploy/secrets/compose-secrets.ts), run into a temporary folder with
// this machine's openssl: each service's folder holds only its own credential, the certificates make a
// working mutual-TLS handshake under the names compose uses (and refuse a client of no certificate), a
// second run changes nothing, and the flat files of earlier releases move to their folders.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import {
  existsSync,
  mkdtempSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import tls from 'node:tls';
import { parse } from 'yaml';
import {
  PAYLOAD_KEYS_FILE,
  SERVICE_FILES,
  SERVICE_SECRETS,
  WEBHOOKS_CLIENT,
  ensureComposeSecrets,
} from '../../deploy/secrets/compose-secrets';

const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function made(prepare?: (root: string) => void): { root: string; lines: string[] } {
  const root = path.join(mkdtempSync(path.join(tmpdir(), 'compose-secrets-')), 'secrets');
  dirs.push(path.dirname(root));
  prepare?.(root);
  const lines: string[] = [];
  ensureComposeSecrets(root, {
    namespace: 'default',
    uiRedirectUri: 'http://127.0.0.1:8080/auth/sso/callback',
    log: (line) => lines.push(line),
  });
  return { root, lines };
}

/** Every file below `dir`, relative, with its content. */
function snapshot(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true }))
    if (entry.isFile()) {
      const file = path.join(entry.parentPath, entry.name);
      files[path.relative(dir, file)] = readFileSync(file, 'utf8');
    }
  return files;
}

/** A TLS handshake with the frontend's files of `root`, as a client of `service` (or of no certificate). */
function handshake(root: string, service: string | null, servername: string): Promise<string> {
  const read = (s: string, f: string) => readFileSync(path.join(root, s, f));
  const server = tls.createServer({
    cert: read('temporal', SERVICE_FILES.serverCert),
    key: read('temporal', SERVICE_FILES.serverKey),
    ca: read('temporal', SERVICE_FILES.ca),
    requestCert: true,
    rejectUnauthorized: true,
  });
  server.on('secureConnection', (socket) => socket.end('hello'));
  server.on('tlsClientError', () => undefined);
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      const socket = tls.connect({
        host: '127.0.0.1',
        port,
        servername,
        ca: read(service ?? 'worker', SERVICE_FILES.ca),
        ...(service
          ? { cert: read(service, SERVICE_FILES.clientCert), key: read(service, SERVICE_FILES.clientKey) }
          : {}),
      });
      let data = '';
      const done = (result: string) => {
        socket.destroy();
        server.close();
        resolve(result);
      };
      socket.on('data', (chunk) => (data += String(chunk)));
      socket.on('end', () => done(data || 'closed'));
      socket.on('error', (err: NodeJS.ErrnoException) => done(`error: ${err.code ?? err.message}`));
    });
  });
}

describe('the secrets job of docker-compose.yml', () => {
  const { root, lines } = made();

  test("each service's folder holds its own credential and nothing of another's", () => {
    const own: Record<string, string[]> = {};
    for (const [service, wants] of Object.entries(SERVICE_SECRETS)) {
      own[service] = readdirSync(path.join(root, service)).sort();
      const expected = [
        SERVICE_FILES.ca,
        ...(wants.certificate === 'client'
          ? [SERVICE_FILES.clientCert, SERVICE_FILES.clientKey]
          : [SERVICE_FILES.serverCert, SERVICE_FILES.serverKey]),
        ...(wants.oidcClient ? [SERVICE_FILES.oidcSecret] : []),
        ...(wants.codecToken ? [SERVICE_FILES.codecToken] : []),
      ].sort();
      assert.deepEqual(own[service], expected, service);
    }
    // Every client secret and key is different: none is shared between two services.
    const secrets = Object.entries(SERVICE_SECRETS).flatMap(([service, wants]) => [
      ...(wants.oidcClient ? [readFileSync(path.join(root, service, SERVICE_FILES.oidcSecret), 'utf8')] : []),
      readFileSync(
        path.join(root, service, wants.certificate === 'client' ? SERVICE_FILES.clientKey : SERVICE_FILES.serverKey),
        'utf8',
      ),
    ]);
    assert.equal(new Set(secrets).size, secrets.length);
    // The CA's key stays in ca/, the directory in sso/.
    assert.deepEqual(
      readdirSync(path.join(root, 'ca')).filter((f) => f.endsWith('-key.pem')),
      ['ca-key.pem'],
    );
    assert.deepEqual(readdirSync(path.join(root, 'payload')), [PAYLOAD_KEYS_FILE]);
    assert.match(readFileSync(path.join(root, 'payload', PAYLOAD_KEYS_FILE), 'utf8'), /^k\d{8}-[0-9a-f]{8} \S{44}\n$/);
  });

  test("each client secret is its client's in the directory, the webhook receiver's a client of its own", () => {
    const directory = parse(readFileSync(path.join(root, 'sso', 'directory.yaml'), 'utf8')) as {
      apps: { clientId: string }[];
      services: { clientId: string; roles: Record<string, string> }[];
    };
    for (const [service, { oidcClient }] of Object.entries(SERVICE_SECRETS)) {
      if (!oidcClient) continue;
      assert.equal(
        readFileSync(path.join(root, service, SERVICE_FILES.oidcSecret), 'utf8'),
        readFileSync(path.join(root, 'sso', `${oidcClient}.secret`), 'utf8'),
        service,
      );
    }
    assert.deepEqual(directory.services.find((s) => s.clientId === WEBHOOKS_CLIENT)?.roles, { default: 'writer' });
    assert.ok(
      lines.some((l) => /^ {2}admin {4}\S{20}$/.test(l)),
      'the people and their passwords, once',
    );
  });

  test('folders 0700 and files 0600', () => {
    for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
      const mode = statSync(path.join(entry.parentPath, entry.name)).mode & 0o777;
      assert.equal(mode, entry.isDirectory() ? 0o700 : 0o600, path.join(entry.parentPath, entry.name));
    }
  });

  test("the frontend's certificate names temporal, localhost and 127.0.0.1; the codec server's only the host", () => {
    const temporal = new X509Certificate(readFileSync(path.join(root, 'temporal', SERVICE_FILES.serverCert)));
    assert.equal(temporal.subjectAltName, 'DNS:temporal, DNS:localhost, IP Address:127.0.0.1');
    const codec = new X509Certificate(readFileSync(path.join(root, 'codec-server', SERVICE_FILES.serverCert)));
    assert.equal(codec.subjectAltName, 'DNS:localhost, IP Address:127.0.0.1');
    const ca = new X509Certificate(readFileSync(path.join(root, 'ca', 'ca.pem')));
    for (const service of Object.keys(SERVICE_SECRETS)) {
      const file =
        SERVICE_SECRETS[service]!.certificate === 'client' ? SERVICE_FILES.clientCert : SERVICE_FILES.serverCert;
      assert.ok(new X509Certificate(readFileSync(path.join(root, service, file))).verify(ca.publicKey), service);
    }
  });

  test('mutual TLS: a service with its certificate gets through under the name `temporal`; none without', async () => {
    for (const service of ['worker', 'cli', 'webhooks', 'temporal-ui', 'temporal-setup'])
      assert.equal(await handshake(root, service, 'temporal'), 'hello', service);
    assert.notEqual(await handshake(root, null, 'temporal'), 'hello', 'no client certificate: refused');
    assert.match(await handshake(root, 'worker', 'postgresql'), /^error: ERR_TLS_CERT_ALTNAME_INVALID$/);
  });

  test('a second run keeps every file', () => {
    const before = snapshot(root);
    const again: string[] = [];
    ensureComposeSecrets(root, { namespace: 'default', uiRedirectUri: 'http://x/cb', log: (l) => again.push(l) });
    assert.deepEqual(again, []);
    assert.deepEqual(snapshot(root), before);
  });

  test('the flat files of earlier releases move to their folders; a replaced HTTPS certificate stays', () => {
    const { root: migrated, lines: moved } = made((dir) => {
      mkdirSync(path.join(dir, 'codec-tls'), { recursive: true });
      writeFileSync(path.join(dir, PAYLOAD_KEYS_FILE), 'k1 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n');
      writeFileSync(path.join(dir, 'codec-token'), 'an-earlier-codec-token-0123456789\n');
      writeFileSync(path.join(dir, 'codec-tls', 'cert.pem'), 'a certificate browsers trust\n');
      writeFileSync(path.join(dir, 'codec-tls', 'key.pem'), 'its key\n');
    });
    assert.match(readFileSync(path.join(migrated, 'payload', PAYLOAD_KEYS_FILE), 'utf8'), /^k1 /);
    assert.match(readFileSync(path.join(migrated, 'codec-server', SERVICE_FILES.codecToken), 'utf8'), /^an-earlier/);
    assert.equal(
      readFileSync(path.join(migrated, 'codec-server', SERVICE_FILES.serverCert), 'utf8'),
      'a certificate browsers trust\n',
    );
    assert.ok(!existsSync(path.join(migrated, PAYLOAD_KEYS_FILE)) && !existsSync(path.join(migrated, 'codec-token')));
    assert.equal(moved.filter((l) => l.startsWith('moved ')).length, 4);
  });
});
