// The one read of an HTTP answer's body (undici) in this process: the admin API's answers and a bundle
// link's error answers. At most `maxBytes` are kept; beyond them the body is destroyed, which closes its
// connection, so a huge answer costs neither memory nor the time to drain it.
import type { Dispatcher } from 'undici';

/** An error answer is read only this far: enough for the API's `{"error": ...}` or a storage error code. */
export const ERROR_BODY_BYTES = 4 * 1024;

/** The body's first `maxBytes` bytes as UTF-8 (a character cut at the end becomes U+FFFD). */
export async function readCapped(body: Dispatcher.ResponseData['body'], maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    if (size + buf.length > maxBytes) {
      chunks.push(buf.subarray(0, maxBytes - size));
      body.destroy();
      break;
    }
    chunks.push(buf);
    size += buf.length;
  }
  return Buffer.concat(chunks).toString('utf8');
}
