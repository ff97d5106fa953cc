/** Free loopback ports for tests, handed out once per process run. */
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';

const handedOut = new Set<number>();

async function freeUdp(): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = createSocket('udp4');
    socket.once('error', reject);
    socket.bind(0, '0.0.0.0', () => {
      const { port } = socket.address();
      socket.close(() => resolve(port));
    });
  });
}

async function freeTcp(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** A UDP port >= 1024 free on every address (what an SRT listener of a pipeline binds). */
export async function freeUdpPort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = await freeUdp();
    if (port >= 1024 && !handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('no free UDP port');
}

export async function freeTcpPort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = await freeTcp();
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('no free TCP port');
}
