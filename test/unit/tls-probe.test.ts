// test-lane: parallel
// The one-line TLS reasons of a failed connect (src/connection/tls-probe.ts) against real local servers:
// mutual TLS, TLS without client certificates, and plain TCP; and the TEMPORAL_TLS_* file settings reaching
// both connections (client and worker) through the one loader.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { after, before, describe, test } from 'node:test';
import { nativeConnectionOptions, temporalConnectionOptions } from '../../src/connection/settings';
import { probeTls, tlsRefusalReason } from '../../src/connection/tls-probe';

const hasOpenssl = spawnSync('openssl', ['version']).status === 0;

describe('TLS probe and refusal reasons', { skip: hasOpenssl ? undefined : 'openssl is not on PATH' }, () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tls-probe-'));
  const file = (name: string) => path.join(dir, name);
  const servers: net.Server[] = [];
  const addresses: Record<'mutual' | 'tls' | 'plain', string> = { mutual: '', tls: '', plain: '' };

  const listen = async (server: net.Server): Promise<string> => {
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  };

  before(async () => {
    const made = spawnSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost'].concat([
        '-keyout',
        file('key.pem'),
        '-out',
        file('cert.pem'),
      ]),
    );
    assert.equal(made.status, 0, made.stderr?.toString());
    const key = readFileSync(file('key.pem'));
    const cert = readFileSync(file('cert.pem'));
    const common = { key, cert, ALPNProtocols: ['h2'] };
    addresses.mutual = await listen(
      tls.createServer({ ...common, ca: cert, requestCert: true, rejectUnauthorized: true }, (s) => s.end()),
    );
    addresses.tls = await listen(tls.createServer(common, (s) => s.end()));
    addresses.plain = await listen(net.createServer((s) => s.on('data', () => s.destroy())));
  });

  after(() => {
    for (const server of servers) server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('tells a mutual-TLS server, a TLS server and a plain one apart', async () => {
    assert.equal(await probeTls(addresses.mutual), 'client-certificate-required');
    assert.equal(await probeTls(addresses.tls), 'tls');
    assert.equal(await probeTls(addresses.plain), 'plain');
  });

  test('one line naming the variables: no certificate for a mutual-TLS server, no TLS for a TLS server', () => {
    const noCert = tlsRefusalReason('h:1', 'client-certificate-required', { tls: true, clientCertificate: false });
    assert.match(noCert ?? '', /^TLS handshake refused by h:1: the server requires a client certificate \(set /);
    assert.match(noCert ?? '', /TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH/);
    assert.ok(!noCert?.includes('\n'));
    const plainClient = tlsRefusalReason('h:1', 'client-certificate-required', {
      tls: false,
      clientCertificate: false,
    });
    assert.match(plainClient ?? '', /client certificate/);
    assert.match(tlsRefusalReason('h:1', 'tls', { tls: false, clientCertificate: false }) ?? '', /requires TLS/);
    // TLS explains nothing here: the caller keeps its "cannot reach" line.
    assert.equal(tlsRefusalReason('h:1', 'plain', { tls: false, clientCertificate: false }), undefined);
    assert.equal(
      tlsRefusalReason('h:1', 'client-certificate-required', { tls: true, clientCertificate: true }),
      undefined,
    );
  });

  test('TEMPORAL_TLS_* files reach the client and the worker connection alike', () => {
    const env = {
      HOME: '/nonexistent',
      TEMPORAL_TLS_CLIENT_CERT_PATH: file('cert.pem'),
      TEMPORAL_TLS_CLIENT_KEY_PATH: file('key.pem'),
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: file('cert.pem'),
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
    };
    for (const options of [temporalConnectionOptions(env), nativeConnectionOptions(env, 'a:1')]) {
      const settings = options.tls as {
        serverNameOverride?: string;
        clientCertPair?: { crt: Uint8Array; key: Uint8Array };
        serverRootCACertificate?: Uint8Array;
      };
      const pem = readFileSync(file('cert.pem'), 'utf8');
      assert.equal(settings.serverNameOverride, 'localhost');
      assert.equal(Buffer.from(settings.clientCertPair?.crt ?? []).toString('utf8'), pem);
      assert.equal(Buffer.from(settings.serverRootCACertificate ?? []).toString('utf8'), pem);
    }
  });
});
