// The provider's signing key (SSO_SIGNING_KEY_FILE): a private RS256 JWK as JSON, made on first start
// (mode 0600) and kept across restarts, so tokens issued before a restart still verify after it.
import { existsSync, readFileSync } from 'node:fs';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { replaceSecretFile } from '../src/config/secret-file';

export class SigningKeyError extends Error {
  override readonly name = 'SigningKeyError';
}

/** The private JWK of `file`, made there first when the file does not exist. */
export async function ensureSigningKey(file: string): Promise<JWK> {
  if (!existsSync(file)) {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const jwk = { ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig' };
    jwk.kid = `sso-${Date.now().toString(36)}`;
    replaceSecretFile(file, `${JSON.stringify(jwk)}\n`);
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new SigningKeyError(`${file}: cannot read the signing key (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
  let jwk: JWK;
  try {
    jwk = JSON.parse(text) as JWK;
  } catch {
    // JSON.parse's message quotes the text: the key's own bytes stay out of the error.
    throw new SigningKeyError(`${file}: the signing key is not JSON (a private RS256 JWK)`);
  }
  if (jwk.kty !== 'RSA' || typeof jwk.d !== 'string')
    throw new SigningKeyError(`${file}: not a private RSA JWK (the provider signs with RS256)`);
  return { ...jwk, alg: 'RS256', use: 'sig' };
}
