/** ezstream 1.0 (libshout 2.4) as a source client: a playlist of files streamed as they are, once. */
import { writeFileSync, chmodSync } from 'node:fs';
import path from 'node:path';
import type { Test } from 'tap';
import { runClient, type ClientProcess } from './client-process.js';

export interface EzstreamOptions {
  dir: string;
  port: number;
  password: string;
  mount: string;
  format: 'MP3' | 'Ogg';
  files: string[];
  timeoutMs: number;
}

export function runEzstream(t: Test, o: EzstreamOptions): ClientProcess {
  const playlist = path.join(o.dir, `ezstream-${o.format}.m3u`);
  writeFileSync(playlist, `${o.files.join('\n')}\n`);
  const config = path.join(o.dir, `ezstream-${o.format}.xml`);
  writeFileSync(
    config,
    `<?xml version="1.0" encoding="UTF-8"?>
<ezstream>
  <servers><server><protocol>HTTP</protocol><hostname>127.0.0.1</hostname><port>${o.port}</port><password>${o.password}</password><tls>None</tls></server></servers>
  <streams><stream><mountpoint>${o.mount}</mountpoint><format>${o.format}</format></stream></streams>
  <intakes><intake><type>playlist</type><filename>${playlist}</filename><stream_once>Yes</stream_once></intake></intakes>
</ezstream>
`,
  );
  chmodSync(config, 0o600); // ezstream refuses a configuration others can read
  return runClient(t, 'ezstream', ['-v', '-c', config], { timeoutMs: o.timeoutMs });
}
