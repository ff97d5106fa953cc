/** Station pieces without an engine: config, the internal stdin input, /proc parsing, the Icecast request. */
import { createServer } from 'node:net';
import t from 'tap';
import { compilePipeline } from '../../src/compiler/compile.js';
import { checkConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/errors.js';
import { checkBasicAuth, parseRequestHead } from '../../src/stations/icecast-harbor.js';
import { findPortHolder, portInUseMessage, probeTcpPort, socketInodes } from '../../src/stations/port-holder.js';
import { parsePipelineSpec } from '../../src/spec/validate.js';
import { ValidationError } from '../../src/errors.js';

const output = { type: 'rtp', host: '127.0.0.1', port: 5004 };

void t.test('station config: defaults, icecast needs a password, the password only with icecast', async (t) => {
  const config = checkConfig({ stations: [{ id: 'a', number: 2, name: 'A', output }] }, 'c.toml');
  const station = config.stations[0];
  t.equal(station?.harbor, 'srt');
  t.equal(station?.latency, 120);
  t.equal(station?.autostart, true);
  t.equal(station?.password, undefined);
  const ice = checkConfig({ stations: [{ id: 'b', number: 3, name: 'B', output, harbor: 'icecast', password: 's3cret' }] }, 'c.toml');
  t.equal(ice.stations[0]?.harbor, 'icecast');

  const refused: [unknown, string][] = [
    [{ id: 'b', number: 3, name: 'B', output, harbor: 'icecast' }, 'c.toml: stations.0.password is required with harbor = "icecast"'],
    [{ id: 'b', number: 3, name: 'B', output, password: 'x' }, 'c.toml: stations.0.password is only used with harbor = "icecast"'],
    [{ id: 'b', number: 3, name: 'B', output, harbor: 'shoutcast' }, 'c.toml: stations.0.harbor must be one of "srt", "icecast"'],
    [{ id: 'b', number: 3, name: 'B', output, latency: 5 }, 'c.toml: stations.0.latency must be >= 20'],
    [{ id: 'b', number: 3, name: 'B', output, harbor: 'icecast', password: 'tab\there' }, 'c.toml: stations.0.password has characters that are not allowed'],
  ];
  for (const [stationDoc, message] of refused) {
    t.throws(() => checkConfig({ stations: [stationDoc] }, 'c.toml'), ConfigError);
    try {
      checkConfig({ stations: [stationDoc] }, 'c.toml');
    } catch (error) {
      t.match((error as Error).message, message);
      t.notMatch((error as Error).message, 'tab\there', 'the password is not echoed');
    }
  }
});

void t.test('the stdin input is internal: the compiler writes fdsrc fd=0, the REST/gRPC schema refuses it', async (t) => {
  const argv = compilePipeline({ input: { type: 'stdin' }, processing: [], output: { ...output, type: 'rtp', ttl: 16, channels: 2, encoding: 'L24', ptime: 1, payload_type: 96, dscp: 34 } }, { statsIntervalMs: 1000, packetsPerSend: 4, clockSource: 'tai', jitterMs: 20 });
  t.same(argv.slice(0, 9), ['-m', '-f', '-e', '--', 'fdsrc', 'name=src', 'fd=0', 'blocksize=4096', '!']);
  t.same(argv.slice(9, 11), ['chaindecode', 'name=decode'], 'decodebin (inside chaindecode) finds the format of the body itself');
  t.notOk(argv.includes('tsdemux'));
  t.ok(argv.includes('async=true'), 'the stdin graph keeps async=true at its sink (its EOS ends the child every time)');
  t.notOk(argv.some((a) => a.startsWith('srtsrc')));
  // Through the clock bridge like SRT, which holds the pipe back when its FIFO is full (an Icecast
  // source's 1 s Ogg pages and catch-up bursts wait in the pipe instead of being dropped).
  const bridge = argv.indexOf('clockbridge');
  t.ok(bridge > 0 && argv.slice(bridge).includes('pace-input=true'), 'the stdin input goes through the clock bridge, paced');
  t.notOk(argv.includes('queue'), 'no queue');
  t.notOk(argv.some((a) => a.startsWith('buffer=')), 'pipelinestats reads no queue (the bridge reports its FIFO)');
  t.ok(argv.includes('media-clock=true'), 'AES67 media-clock RTP timestamps, as for SRT');
  const srt = compilePipeline(parsePipelineSpec({ name: 'x', input: { type: 'srt', port: 9000 }, output }), { statsIntervalMs: 1000, packetsPerSend: 4, clockSource: 'tai', jitterMs: 20 });
  t.ok(srt.includes('async=false'), 'SRT graphs are unchanged');
  t.ok(srt.includes('tsdemux'), 'SRT graphs demultiplex MPEG-TS themselves');
  t.ok(srt.includes('clockbridge'), 'SRT graphs run through the clock bridge');
  t.throws(() => parsePipelineSpec({ name: 'x', input: { type: 'stdin' }, output }), ValidationError);
});

void t.test('/proc/net parsing and the 409 message', async (t) => {
  const table = [
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
    '   0: 0100007F:1FA5 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 123456 1 0000000000000000 100 0 0 10 0',
    '   1: 00000000:1FA6 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 654321 2 0000000000000000 0 0 0 0 0',
    '   2: 00000000:1FA5 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 0 2 0000000000000000 0 0 0 0 0',
  ].join('\n');
  t.same([...socketInodes(table, 0x1fa5)], ['123456']);
  t.same([...socketInodes(table, 0x1fa6)], ['654321']);
  t.same([...socketInodes(table, 80)], []);
  t.equal(portInUseMessage(8101, undefined), 'port 8101 is already in use');
  t.equal(portInUseMessage(8101, { pid: 42, comm: 'liquidsoap' }), 'port 8101 is already in use by liquidsoap (pid 42)');
  t.equal(portInUseMessage(8101, { pid: 42, comm: 'bad\nname' }), 'port 8101 is already in use by bad?name (pid 42)');
});

void t.test('the TCP probe and the holder search see a real listener (this process is skipped as holder)', async (t) => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  t.equal(await probeTcpPort(port), 'in-use');
  t.equal(await findPortHolder(port, 'tcp'), undefined, 'the engine never names itself');
  t.equal(await findPortHolder(port, 'udp'), undefined, 'nothing on UDP');
});

void t.test('Icecast request heads and Basic credentials', async (t) => {
  const head = parseRequestHead('SOURCE /live ICE/1.0\r\nAuthorization: Basic c291cmNlOnB3\r\ncontent-type: audio/mpeg');
  t.equal(head?.method, 'SOURCE');
  t.equal(head?.path, '/live');
  t.equal(head?.headers.get('content-type'), 'audio/mpeg');
  t.equal(parseRequestHead('PUT /live HTTP/1.1\r\nExpect: 100-continue')?.headers.get('expect'), '100-continue');
  t.equal(parseRequestHead('GET / HTTP/2'), undefined);
  t.equal(parseRequestHead('PUT /live HTTP/1.1\r\nno colon here'), undefined);
  const basic = (user: string, pass: string): string => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
  t.ok(checkBasicAuth(basic('source', 'pw'), 'pw'));
  t.ok(checkBasicAuth(basic('source', 'a:b c'), 'a:b c'), 'a colon and a space in the password');
  t.notOk(checkBasicAuth(basic('admin', 'pw'), 'pw'), 'user must be source');
  t.notOk(checkBasicAuth(basic('source', 'pw2'), 'pw'));
  t.notOk(checkBasicAuth(undefined, 'pw'));
  t.notOk(checkBasicAuth('Bearer pw', 'pw'));
});
