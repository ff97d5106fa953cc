// Listens for SAP on 239.255.255.255:9875, joined on the interface with the given IPv4 address,
// and prints one line per packet: `<ms since start> <base64 of the packet>`. Ends by itself after
// the given number of seconds. Run inside a test's network namespace.
//   node --import tsx sap-listener.ts <interface address> <seconds>
import { createSocket } from 'node:dgram';

const [address, seconds] = process.argv.slice(2);
const started = Date.now();
const socket = createSocket({ type: 'udp4', reuseAddr: true });
socket.on('message', (packet: Buffer) => process.stdout.write(`${Date.now() - started} ${packet.toString('base64')}\n`));
socket.bind(9875, () => {
  socket.addMembership('239.255.255.255', address ?? '0.0.0.0');
  process.stdout.write('ready\n');
});
setTimeout(() => socket.close(), Number(seconds) * 1000);
