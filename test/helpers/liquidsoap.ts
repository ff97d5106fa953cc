/**
 * liquidsoap 2.1 as a source client: a sine through `output.icecast` (%mp3, %vorbis or %opus), a
 * new title every `titleEverySeconds` (%mp3: a `GET /admin/metadata` update; %vorbis, %opus: a
 * new Ogg chain), then a clean shutdown after `seconds`.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Test } from 'tap';
import { runClient, type ClientProcess } from './client-process.js';

export interface LiquidsoapOptions {
  dir: string;
  port: number;
  password: string;
  mount: string;
  encoder: 'mp3' | 'vorbis' | 'opus';
  amplitude: number;
  seconds: number;
  titleEverySeconds: number;
}

export function runLiquidsoap(t: Test, o: LiquidsoapOptions): ClientProcess {
  const encoder = {
    mp3: '%mp3(bitrate=192, samplerate=48000)',
    vorbis: '%vorbis(samplerate=48000, quality=0.6)',
    opus: '%opus(samplerate=48000, bitrate=128)',
  }[o.encoder];
  const script = path.join(o.dir, `source-${o.encoder}.liq`);
  writeFileSync(
    script,
    `settings.init.allow_root.set(true)
settings.log.stdout.set(true)
settings.log.file.set(false)
settings.log.level.set(3)
settings.frame.audio.samplerate.set(48000)
s = insert_metadata(sine(amplitude=${o.amplitude}, 1000.))
n = ref(0)
def change() =
  n := !n + 1
  s.insert_metadata([("title", "Title #{!n}")])
end
thread.run(delay=${o.titleEverySeconds}., every=${o.titleEverySeconds}., change)
thread.run(delay=${o.seconds}., shutdown)
output.icecast(${encoder}, host="127.0.0.1", port=${o.port}, password="${o.password}", mount="${o.mount}", s)
`,
  );
  // Bounded; its start alone (type-checking its library) took 15 s on a loaded machine.
  return runClient(t, 'liquidsoap', [script], { timeoutMs: (o.seconds + 75) * 1000 });
}
