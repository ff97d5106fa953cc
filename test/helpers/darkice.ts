/**
 * darkice 1.3 as an Icecast source client (its header lines end in a bare \n). darkice records
 * from an ALSA device; without sound hardware its input is an ALSA `file` PCM (defined in an
 * asoundrc named by ALSA_CONFIG_PATH) whose `infile` is a FIFO that ffmpeg fills with a sine in
 * real time (`-re`): darkice reads real PCM at the real rate and encodes it itself (MP3, lame).
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Test } from 'tap';
import { runClient, type ClientProcess } from './client-process.js';

export interface DarkiceOptions {
  dir: string;
  port: number;
  password: string;
  mount: string;
  seconds: number;
  amplitude: number;
  frequency?: number;
}

export function runDarkice(t: Test, o: DarkiceOptions): { darkice: ClientProcess; feeder: ClientProcess } {
  const fifo = path.join(o.dir, 'darkice-input.fifo');
  execFileSync('mkfifo', [fifo]);
  const asoundrc = path.join(o.dir, 'asoundrc');
  writeFileSync(asoundrc, `pcm.harbortest {\n  type file\n  slave.pcm "null"\n  file "/dev/null"\n  infile "${fifo}"\n  format "raw"\n}\n`);
  const config = path.join(o.dir, 'darkice.cfg');
  writeFileSync(
    config,
    [
      '[general]', `duration = ${o.seconds}`, 'bufferSecs = 1', 'reconnect = no', 'realtime = no',
      '[input]', 'device = harbortest', 'sampleRate = 48000', 'bitsPerSample = 16', 'channel = 2',
      '[icecast2-0]', 'format = mp3', 'bitrateMode = cbr', 'bitrate = 192', 'server = 127.0.0.1', `port = ${o.port}`,
      `password = ${o.password}`, `mountPoint = ${o.mount.replace(/^\//, '')}`, 'name = harbor test', '',
    ].join('\n'),
  );
  const f = o.frequency ?? 1000;
  const expr = `${o.amplitude}*sin(2*PI*${f}*t)`;
  // A little longer than darkice records, so its input never runs dry.
  const feeder = runClient(t, 'ffmpeg', ['-hide_banner', '-loglevel', 'error', '-nostdin', '-re', '-f', 'lavfi', '-i', `aevalsrc=${expr}|${expr}:s=48000:d=${o.seconds + 2}`, '-f', 's16le', '-c:a', 'pcm_s16le', '-y', fifo], { timeoutMs: (o.seconds + 15) * 1000 });
  const darkice = runClient(t, 'darkice', ['-c', config], {
    env: { ALSA_CONFIG_PATH: `/usr/share/alsa/alsa.conf:${asoundrc}` },
    timeoutMs: (o.seconds + 15) * 1000,
  });
  // darkice gone: nothing reads the FIFO any more, the feeder goes too.
  void darkice.done.then(() => feeder.stop());
  return { darkice, feeder };
}
