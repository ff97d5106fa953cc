/**
 * The SAP sender: one UDP socket bound to the sending interface's address, multicast out of that
 * interface with the configured TTL, to 239.255.255.255:9875.
 */
import { createSocket, type Socket } from 'node:dgram';
import { SAP_GROUP, SAP_PORT } from './sap.js';

export interface SapSender {
  send(packet: Buffer): Promise<void>;
  close(): Promise<void>;
}

export async function openSapSender(address: string, ttl: number): Promise<SapSender> {
  const socket: Socket = createSocket({ type: 'udp4', reuseAddr: true });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind({ address, port: 0 }, () => {
      socket.off('error', reject);
      resolve();
    });
  });
  socket.setMulticastInterface(address);
  socket.setMulticastTTL(ttl);
  socket.setMulticastLoopback(true); // a receiver on this host (a local AES67 bridge) sees it too
  socket.on('error', () => undefined); // a send error is reported by send()'s callback
  return {
    send: (packet) =>
      new Promise((resolve, reject) => {
        socket.send(packet, SAP_PORT, SAP_GROUP, (error) => (error ? reject(error) : resolve()));
      }),
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}
