/** ices2 (IceS 2.0.3, libshout) as a source client: the playlist input module, Ogg files once, re-encoded to Vorbis. */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Test } from 'tap';
import { runClient, type ClientProcess } from './client-process.js';

export interface Ices2Options {
  dir: string;
  port: number;
  password: string;
  mount: string;
  files: string[];
  timeoutMs: number;
}

export function runIces2(t: Test, o: Ices2Options): ClientProcess {
  const playlist = path.join(o.dir, 'ices2-playlist.txt');
  writeFileSync(playlist, `${o.files.join('\n')}\n`);
  const config = path.join(o.dir, 'ices2.xml');
  writeFileSync(
    config,
    `<?xml version="1.0"?>
<ices>
  <background>0</background>
  <logpath>${o.dir}</logpath>
  <logfile>ices2.log</logfile>
  <loglevel>3</loglevel>
  <consolelog>1</consolelog>
  <stream>
    <metadata><name>harbor test</name></metadata>
    <input>
      <module>playlist</module>
      <param name="type">basic</param>
      <param name="file">${playlist}</param>
      <param name="random">0</param>
      <param name="once">1</param>
    </input>
    <instance>
      <hostname>127.0.0.1</hostname>
      <port>${o.port}</port>
      <password>${o.password}</password>
      <mount>${o.mount}</mount>
      <reconnectdelay>1</reconnectdelay>
      <reconnectattempts>0</reconnectattempts>
      <encode><quality>5</quality><samplerate>48000</samplerate><channels>2</channels></encode>
    </instance>
  </stream>
</ices>
`,
  );
  return runClient(t, 'ices2', [config], { timeoutMs: o.timeoutMs });
}
