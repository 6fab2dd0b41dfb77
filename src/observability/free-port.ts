// A TCP port on 127.0.0.1 that was free a moment ago: for endpoints the process binds itself, and for
// tests that need a port nothing listens on (connection refused before any byte is sent).
import net from 'node:net';

export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
