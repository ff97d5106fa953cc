import t from 'tap';
import { compilePipeline, compileSecrets, PASSPHRASE_FD } from '../../src/compiler/compile.js';
import { CAPS, element, formatNumber, formatValue, UnsafeValueError } from '../../src/compiler/elements.js';
import { ValidationError } from '../../src/errors.js';
import { parsePipelineSpec } from '../../src/spec/validate.js';
import { EXAMPLE } from '../fixtures/example.js';

const OPTIONS = { statsIntervalMs: 1000, packetsPerSend: 1, clockSource: 'tai', jitterMs: 20 };

void t.test('the exact argv of the interface example', async (t) => {
  const argv = compilePipeline(parsePipelineSpec(EXAMPLE), OPTIONS);
  t.same(argv, [
    '-m', '-f', '-e', '--',
    'srtsrc', 'name=src', 'mode=listener', 'localaddress=0.0.0.0', 'localport=9000', 'latency=120', 'poll-timeout=100', 'keep-listening=true', 'wait-for-connection=true',
    '!', 'typefind', 'name=typefind',
    '!', 'tsdemux', 'name=demux',
    '!', 'audio/mpeg;audio/x-lpcm;audio/x-private-ts-lpcm;audio/x-smpte-302m;audio/x-ac3;audio/x-eac3;audio/x-ac4;audio/x-dts;audio/x-opus',
    '!', 'aacframer', 'name=framer', '!', 'decodebin', 'name=decode',
    '!', 'audioconvert', 'name=inconvert',
    '!', 'audioresample', 'name=resample',
    '!', 'audio/x-raw,format=F32LE,layout=interleaved,rate=48000,channels=2',
    '!', 'clockbridge', 'name=bridge', 'clock-source=tai', 'jitter=20000000', 'chunk=1000000', 'interval=1000000000', 'meter-interval=1000000000', 'channels=2',
    '!', 'loudnorm', 'name=step0', 'target=-23', 'true-peak=-1', 'interval=1000000000',
    '!', 'parametriceq', 'name=step1', 'bands="100:-2:1,8000:1.5:1"',
    '!', 'l24pack', 'name=outconvert',
    '!', 'rtpL24pay', 'name=pay', 'pt=96', 'min-ptime=1000000', 'max-ptime=1000000',
    '!', 'rtpbatch', 'name=batch', 'packets=1', 'media-clock=true',
    '!', 'udpsink', 'name=out', 'host=239.69.1.1', 'port=5004', 'ttl-mc=16', 'auto-multicast=true', 'qos-dscp=34', 'sync=true', 'processing-deadline=0', 'async=false', 'bind-port=61004',
    'pipelinestats', 'name=stats', 'interval=1000000000', 'source=src', 'payloader=pay', 'sink=out',
    'srtaccess', 'name=access', 'source=src',
    'enginecontrol', 'name=control', 'fd=4',
  ]);
});

void t.test('a passphrase is never an argv token: srtaccess reads it from descriptor 3', async (t) => {
  const secret = 'correct horse battery staple';
  const spec = parsePipelineSpec({ ...EXAMPLE, input: { type: 'srt', port: 9000, passphrase: secret, pbkeylen: 32 } });
  const argv = compilePipeline(spec, { statsIntervalMs: 1000, packetsPerSend: 4, clockSource: 'tai', jitterMs: 20 });
  t.notOk(argv.some((token) => token.includes('correct') || token.includes('passphrase=')), 'no token holds the secret');
  const src = argv.indexOf('srtsrc');
  t.ok(argv.slice(src, argv.indexOf('!')).includes('pbkeylen=32'), 'the key length is on srtsrc');
  t.same(argv.slice(-7, -3), ['srtaccess', 'name=access', 'source=src', `passphrase-fd=${PASSPHRASE_FD}`]);
  t.equal(PASSPHRASE_FD, 3);
  const secrets = compileSecrets(spec);
  t.equal(secrets.length, 1, 'one descriptor: 3');
  t.equal(Buffer.from(secrets[0] ?? new Uint8Array()).toString('ascii'), secret, 'exactly the passphrase, no newline');
  const defaulted = parsePipelineSpec({ ...EXAMPLE, input: { type: 'srt', port: 9000, passphrase: secret } });
  t.ok(compilePipeline(defaulted, { statsIntervalMs: 1000, packetsPerSend: 1, clockSource: 'tai', jitterMs: 20 }).includes('pbkeylen=16'), 'default key length 16');
  const open = compilePipeline(parsePipelineSpec(EXAMPLE), { statsIntervalMs: 1000, packetsPerSend: 1, clockSource: 'tai', jitterMs: 20 });
  t.notOk(open.some((token) => token.startsWith('pbkeylen') || token.startsWith('passphrase-fd')), 'no passphrase: neither');
  t.same(compileSecrets(parsePipelineSpec(EXAMPLE)), []);
  t.throws(() => element('srtaccess', { 'passphrase-fd': 0 }), UnsafeValueError, 'never stdin');
  t.throws(() => element('srtsrc', { pbkeylen: '20' }), UnsafeValueError);
});

void t.test('steps compile in order; the multicast interface is its own token', async (t) => {
  const spec = parsePipelineSpec({
    ...EXAMPLE,
    processing: [{ plugin: 'eq', bands: [{ freq: 1000, gain: -3, q: 2.5 }] }, { plugin: 'loudness-normalize', target: -16.5, true_peak: -2 }],
    output: { type: 'rtp', host: 'ff02::1', port: 5004, ttl: 4, interface: 'eth0' },
  });
  const argv = compilePipeline(spec, { ...OPTIONS, statsIntervalMs: 250 });
  const eq = argv.indexOf('parametriceq');
  const ln = argv.indexOf('loudnorm');
  t.ok(eq > 0 && ln > eq, 'eq before loudness, as asked');
  t.same(argv.slice(ln, ln + 5), ['loudnorm', 'name=step1', 'target=-16.5', 'true-peak=-2', 'interval=250000000']);
  t.ok(argv.includes('bands="1000:-3:2.5"'));
  t.ok(argv.includes('host=ff02::1'));
  t.ok(argv.includes('ttl-mc=4'));
  t.ok(argv.includes('multicast-iface=eth0'));
});

void t.test('rtpbatch is always there (media-clock timestamps); packets per send sets its lists and the bridge chunk', async (t) => {
  const batched = compilePipeline(parsePipelineSpec(EXAMPLE), { ...OPTIONS, packetsPerSend: 4 });
  const pay = batched.indexOf('rtpL24pay');
  const sink = batched.indexOf('udpsink');
  t.same(batched.slice(sink - 5, sink), ['rtpbatch', 'name=batch', 'packets=4', 'media-clock=true', '!']);
  t.ok(pay > 0 && pay < sink - 5, 'after the payloader');
  t.ok(batched.includes('chunk=4000000'), 'the bridge puts out one list of packets per chunk');
  t.ok(batched.includes('payloader=pay'), 'pipelinestats still counts packets at the payloader');
  const strict = compilePipeline(parsePipelineSpec(EXAMPLE), OPTIONS);
  t.ok(strict.includes('packets=1') && strict.includes('chunk=1000000'));
  t.throws(() => compilePipeline(parsePipelineSpec(EXAMPLE), { ...OPTIONS, packetsPerSend: 17 }), UnsafeValueError, 'out of the allow-list range');
});

void t.test('the clock bridge takes the clock source and jitter of the configuration, checked again', async (t) => {
  for (const clockSource of ['tai', 'realtime', '/dev/ptp0']) {
    t.ok(compilePipeline(parsePipelineSpec(EXAMPLE), { ...OPTIONS, clockSource }).includes(`clock-source=${clockSource}`), clockSource);
  }
  t.ok(compilePipeline(parsePipelineSpec(EXAMPLE), { ...OPTIONS, jitterMs: 500 }).includes('jitter=500000000'));
  // the setpoint's ceiling: the engine's, a pipeline's own first, none without either
  t.ok(compilePipeline(parsePipelineSpec(EXAMPLE), { ...OPTIONS, jitterMaxMs: 300 }).includes('jitter-max=300000000'));
  t.ok(compilePipeline(parsePipelineSpec({ ...EXAMPLE, jitter_max_ms: 120 }), { ...OPTIONS, jitterMaxMs: 300 }).includes('jitter-max=120000000'));
  t.notOk(compilePipeline(parsePipelineSpec(EXAMPLE), OPTIONS).some((token) => token.startsWith('jitter-max=')));
  t.throws(() => compilePipeline(parsePipelineSpec(EXAMPLE), { ...OPTIONS, jitterMaxMs: 2501 }), UnsafeValueError, 'ceiling above 2.5 s');
  for (const clockSource of ['', 'monotonic', '/dev/sda', '/dev/ptp0 ! fakesink', 'tai\n']) {
    t.throws(() => compilePipeline(parsePipelineSpec(EXAMPLE), { ...OPTIONS, clockSource }), UnsafeValueError, JSON.stringify(clockSource));
  }
  t.throws(() => compilePipeline(parsePipelineSpec(EXAMPLE), { ...OPTIONS, jitterMs: 4 }), UnsafeValueError, 'jitter below 5 ms');
  t.throws(() => compilePipeline(parsePipelineSpec(EXAMPLE), { ...OPTIONS, jitterMs: 501 }), UnsafeValueError, 'jitter above 500 ms');
});

void t.test('every description token is free of what the gst-launch parser splits on', async (t) => {
  const argv = compilePipeline(parsePipelineSpec(EXAMPLE), { ...OPTIONS, packetsPerSend: 4 });
  const fixedCaps: string[] = Object.values(CAPS);
  for (const token of argv.slice(4)) {
    // the fixed caps filters list alternatives with ';' (caps syntax); no value ever does
    if (fixedCaps.includes(token)) t.match(token, /^[A-Za-z0-9/,=;_-]+$/, token);
    else t.notMatch(token, /[\s'\\;()]/, token);
  }
});

/** Values an attacker might send; each must be stopped by validation before the compiler. */
interface LooseBody {
  input: Record<string, unknown>;
  output: Record<string, unknown>;
  processing: unknown[];
}
const injections: [string, (s: LooseBody) => void][] = [
  ['tab in host', (s) => { s.output.host = '127.0.0.1\tfakesink'; }],
  ['newline in host', (s) => { s.output.host = '127.0.0.1\n! filesink location=/etc/passwd'; }],
  ['CR in host', (s) => { s.output.host = '127.0.0.1\r'; }],
  ['quote in host', (s) => { s.output.host = '"127.0.0.1'; }],
  ['element in host', (s) => { s.output.host = '127.0.0.1 ! filesink location=/tmp/x'; }],
  ['property in host', (s) => { s.output.host = '127.0.0.1 port=1'; }],
  ['uri query in host', (s) => { s.output.host = '127.0.0.1?mode=caller'; }],
  ['--gst option in host', (s) => { s.output.host = '--gst-plugin-path=/tmp'; }],
  ['string port', (s) => { s.input.port = '9000 mode=caller'; }],
  ['string latency', (s) => { s.input.latency = '120 ! fakesink'; }],
  ['NaN-like target', (s) => { s.processing = [{ plugin: 'loudness-normalize', target: 'NaN' }]; }],
  ['string gain', (s) => { s.processing = [{ plugin: 'eq', bands: [{ freq: 100, gain: '1,2:3' }] }]; }],
  ['interface with space', (s) => { s.output.interface = 'eth0 ! fakesink'; }],
  ['interface with quote', (s) => { s.output.interface = 'eth0"'; }],
  ['plugin name injection', (s) => { s.processing = [{ plugin: 'eq ! filesink' }]; }],
  ['extra property field', (s) => { s.input.mode = 'caller'; }],
  ['passphrase with a newline and an element', (s) => { s.input.passphrase = 'abcdefghij\n! filesink location=/tmp/x'; }],
  ['pbkeylen text', (s) => { s.input.passphrase = 'abcdefghijk'; s.input.pbkeylen = '16 ! fakesink'; }],
  ['exponent gain', (s) => { s.processing = [{ plugin: 'eq', bands: [{ freq: 100, gain: 1e300 }] }]; }],
];

for (const [what, patch] of injections) {
  void t.test(`validation stops ${what}`, async (t) => {
    const body = structuredClone(EXAMPLE) as unknown as LooseBody;
    patch(body);
    t.throws(() => parsePipelineSpec(body), ValidationError);
  });
}

void t.test('the compiler refuses what validation should have stopped (defence in depth)', async (t) => {
  t.throws(() => element('udpsink', { host: '1.2.3.4 ! fakesink' }), UnsafeValueError);
  t.throws(() => element('udpsink', { port: 70000 }), UnsafeValueError);
  t.throws(() => element('udpsink', { port: 1.5 }), UnsafeValueError);
  t.throws(() => element('udpsink', { 'multicast-iface': 'a b' }), UnsafeValueError);
  t.throws(() => element('loudnorm', { target: Number.NaN }), UnsafeValueError);
  t.throws(() => element('srtsrc', { mode: 'caller' }), UnsafeValueError);
  // pipelinestats reads no queue any more (the element lost its buffer property): not on the allow-list either
  t.throws(() => element('pipelinestats', { buffer: '' } as never), UnsafeValueError);
  t.throws(() => element('srtsrc', { localaddress: 'fe80::1%eth0' }), UnsafeValueError);
  t.throws(() => element('parametriceq', { bands: [{ freq: 100, gain: 1, q: Number.POSITIVE_INFINITY }] }), UnsafeValueError);
  t.throws(() => element('parametriceq', { bands: [] }), UnsafeValueError);
  t.throws(() => formatValue('x', 'y', { kind: 'element-name' }, 'step0 ! x'), UnsafeValueError);
  t.throws(() => element('udpsink', { uri: 'x' } as never), UnsafeValueError, 'a property outside the allow-list');
});

void t.test('numbers are written in plain decimal', async (t) => {
  t.equal(formatNumber(-23, 3), '-23');
  t.equal(formatNumber(2.5, 3), '2.5');
  t.equal(formatNumber(1e-9, 3), '0');
  t.equal(formatNumber(-0.0001, 3), '0');
  t.equal(formatNumber(19999.999, 2), '20000');
  t.equal(formatNumber(0.1 + 0.2, 3), '0.3');
});

void t.test('meters (the bridge\'s level, loudnorm) report at meterIntervalMs, the transport stats keep statsIntervalMs', async (t) => {
  const argv = compilePipeline(parsePipelineSpec(EXAMPLE), { statsIntervalMs: 1000, meterIntervalMs: 100, packetsPerSend: 1, clockSource: 'tai', jitterMs: 20 });
  const after = (name: string, property = 'interval='): string | undefined => argv.slice(argv.indexOf(name)).find((token) => token.startsWith(property));
  t.equal(after('name=bridge', 'meter-interval='), 'meter-interval=100000000', 'the input meter every 100 ms');
  t.equal(after('name=bridge'), 'interval=1000000000', 'the bridge\'s own message every 1000 ms');
  t.notOk(argv.includes('level'), 'no level element: the bridge meters its output');
  t.equal(after('name=step0'), 'interval=100000000', 'loudnorm every 100 ms');
  t.equal(after('name=stats'), 'interval=1000000000', 'pipelinestats every 1000 ms');
});
