/** Is a UDP port free to bind? Tried for real: only the kernel knows. */
import { createSocket } from 'node:dgram';

export type PortProbe = 'free' | 'in-use' | 'denied';

export function probeUdpPort(port: number, address = '0.0.0.0'): Promise<PortProbe> {
  return new Promise((resolve) => {
    const socket = createSocket({ type: address.includes(':') ? 'udp6' : 'udp4', reuseAddr: false });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      socket.close();
      resolve(error.code === 'EADDRINUSE' ? 'in-use' : 'denied');
    });
    socket.bind({ port, address, exclusive: true }, () => {
      socket.close(() => resolve('free'));
    });
  });
}
