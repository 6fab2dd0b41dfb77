// Why a connection to a server that answers TCP failed, when TLS is the reason: gRPC reports a refused
// handshake as a generic unavailable or a timeout, so after a failed connect one TLS handshake of our
// own tells "the server requires TLS" and "the server requires a client certificate" apart, and the
// caller gets one line that names the variables to set.
import tls from 'node:tls';
import { splitAddress } from './reach';

export type TlsProbe = 'plain' | 'tls' | 'client-certificate-required';

/** The TEMPORAL_TLS_* names a client of a mutual-TLS server sets (@temporalio/envconfig's). */
export const CLIENT_TLS_VARIABLES =
  'TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH and TEMPORAL_TLS_SERVER_NAME';

/**
 * Opens a TLS connection without a certificate. 'plain': no TLS handshake; 'client-certificate-required':
 * the server refused to go on without one (TLS 1.3 sends that alert right after the handshake, so the
 * probe waits `settleMs` for it); 'tls': TLS without a client certificate was accepted.
 */
export function probeTls(address: string, timeoutMs = 2_000, settleMs = 300): Promise<TlsProbe> {
  const { host, port } = splitAddress(address);
  return new Promise((resolve) => {
    let settled = false;
    const done = (result: TlsProbe) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(result);
    };
    const socket = tls.connect({ host, port, rejectUnauthorized: false, ALPNProtocols: ['h2'] });
    socket.setTimeout(timeoutMs, () => done('plain'));
    socket.once('secureConnect', () => setTimeout(() => done('tls'), settleMs).unref());
    socket.once('error', (err: NodeJS.ErrnoException) =>
      // An alert from a TLS server that wants what we did not send (TLS 1.3: certificate required; 1.2:
      // handshake failure); anything else (wrong version number, reset) is a server without TLS.
      done(
        /ALERT_(CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE|BAD_CERTIFICATE)/.test(err.code ?? '')
          ? 'client-certificate-required'
          : 'plain',
      ),
    );
  });
}

export interface ClientTlsSettings {
  /** TLS is configured at all (TEMPORAL_TLS_*, TEMPORAL_API_KEY). */
  tls: boolean;
  /** A client certificate is configured. */
  clientCertificate: boolean;
}

/** The one-line reason for a failed connect when TLS explains it, else undefined. */
export function tlsRefusalReason(address: string, probe: TlsProbe, client: ClientTlsSettings): string | undefined {
  if (probe === 'client-certificate-required' && !client.clientCertificate)
    return (
      `TLS handshake refused by ${address}: the server requires a client certificate ` +
      `(set ${CLIENT_TLS_VARIABLES}; \`npm run cluster -- --tls\` prints them)`
    );
  if (probe !== 'plain' && !client.tls)
    return `the Temporal server at ${address} requires TLS: set ${CLIENT_TLS_VARIABLES} (\`npm run cluster -- --tls\` prints them)`;
  return undefined;
}
