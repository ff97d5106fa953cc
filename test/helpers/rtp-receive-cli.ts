/**
 * RtpReceiver as a process of its own, for a receiver inside another network namespace (a test
 * cannot move its own sockets there): `nsenter --target PID --net -- node --import tsx
 * test/helpers/rtp-receive-cli.ts PORT SECONDS` binds 127.0.0.1:PORT of that namespace, prints
 * `listening` once bound, receives until its stdin ends or SECONDS (at most 120) pass, then
 * prints RtpReceiver.audioStats(0.5) (the level over the audio window: the output carries silence
 * until the caller's audio comes) as one JSON line and exits.
 */
import { RtpReceiver } from './rtp-receiver.js';

const port = Number(process.argv[2]);
const seconds = Number(process.argv[3]);
if (!Number.isInteger(port) || port < 1 || port > 65535 || !(seconds > 0 && seconds <= 120)) {
  process.stderr.write('usage: rtp-receive-cli.ts PORT SECONDS (1..65535, 0 < SECONDS <= 120)\n');
  process.exit(2);
}
const receiver = await RtpReceiver.open(port, { receiveBufferBytes: 4 * 1024 * 1024 });
process.stdout.write('listening\n');
await new Promise<void>((resolve) => {
  const timer = setTimeout(resolve, seconds * 1000);
  process.stdin.on('end', () => {
    clearTimeout(timer);
    resolve();
  });
  process.stdin.resume();
});
const stats = receiver.audioStats(0.5);
await receiver.close();
process.stdout.write(`${JSON.stringify(stats)}\n`);
