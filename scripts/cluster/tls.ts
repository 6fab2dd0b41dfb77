// Mutual TLS of `npm run cluster -- --tls`: a private CA, the frontend's certificate (127.0.0.1 and
// localhost) and one client certificate, made with openssl (deploy/secrets/certificates.ts, as compose's
// secrets job makes its own) under .data/cluster/tls/ (git-ignored, never committed) on the first --tls
// run and reused after. The frontend requires a client certificate signed by that CA; the internode
// traffic stays plain (every service is on 127.0.0.1). The server reads the names of Temporal's server
// image (TEMPORAL_TLS_FRONTEND_CERT, ...: deploy/temporal/config.yaml); clients, the temporal CLI and the
// UI server read @temporalio/envconfig's TEMPORAL_TLS_* names.
import path from 'node:path';
import {
  type CertificateAuthority,
  type CertificateRequest,
  ensureCertificates,
} from '../../deploy/secrets/certificates';
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

const CA: CertificateAuthority = { dir: TLS_DIR, commonName: 'docs-admin cluster CA' };
const CERTIFICATES: CertificateRequest[] = [
  { dir: TLS_DIR, name: 'server', commonName: TLS_SERVER_NAME, serverNames: ['127.0.0.1', 'localhost'] },
  { dir: TLS_DIR, name: 'client', commonName: 'docs-admin client' },
];

/** Creates the CA and both certificates unless they exist. Returns whether it made any now. */
export function ensureTlsMaterial(): boolean {
  return ensureCertificates(CA, CERTIFICATES).length > 0;
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
