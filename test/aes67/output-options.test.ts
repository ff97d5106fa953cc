/** The AES67 output options: validation (REST and gRPC paths) and what reaches the graph. */
import t from 'tap';
import { compilePipeline, ptimeNs } from '../../src/compiler/compile.js';
import { processingCaps, UnsafeValueError } from '../../src/compiler/elements.js';
import { ValidationError } from '../../src/errors.js';
import { DOTTED, parsePipelineSpec, REST_BODY, specWarnings } from '../../src/spec/validate.js';
import { EXAMPLE } from '../fixtures/example.js';

const withOutput = (output: Record<string, unknown>) => ({ ...EXAMPLE, output: { ...EXAMPLE.output, ...output } });
const compile = (output: Record<string, unknown>) => compilePipeline(parsePipelineSpec(withOutput(output)), { statsIntervalMs: 1000, packetsPerSend: 1, clockSource: 'tai', jitterMs: 20 });

void t.test('defaults: 2 channels, L24, 1 ms, payload type 96, DSCP 34', async (t) => {
  const spec = parsePipelineSpec(EXAMPLE);
  t.same(
    { channels: spec.output.channels, encoding: spec.output.encoding, ptime: spec.output.ptime, payload_type: spec.output.payload_type, dscp: spec.output.dscp },
    { channels: 2, encoding: 'L24', ptime: 1, payload_type: 96, dscp: 34 },
  );
});

void t.test('every option reaches its element property and nothing else', async (t) => {
  const argv = compile({ channels: 1, encoding: 'L16', ptime: 0.333, payload_type: 101, dscp: 46 });
  t.ok(argv.includes('audio/x-raw,format=F32LE,layout=interleaved,rate=48000,channels=1'), 'processing caps carry the channel count');
  const pay = argv.indexOf('rtpL16pay');
  t.same(argv.slice(pay, pay + 5), ['rtpL16pay', 'name=pay', 'pt=101', 'min-ptime=333334', 'max-ptime=333334']);
  t.notOk(argv.includes('rtpL24pay'));
  t.same(argv.slice(pay - 3, pay), ['audioconvert', 'name=outconvert', '!'], 'L16: audioconvert makes the S16BE (it dithers at 16 bits)');
  t.ok(argv.includes('qos-dscp=46'));
  const eight = compile({ channels: 8, ptime: 0.125 });
  const pay24 = eight.indexOf('rtpL24pay');
  t.same(eight.slice(pay24 - 3, pay24), ['l24pack', 'name=outconvert', '!'], 'L24: l24pack makes the S24BE');
  t.ok(eight.includes('audio/x-raw,format=F32LE,layout=interleaved,rate=48000,channels=8'));
  t.ok(eight.includes('min-ptime=125000'));
});

void t.test('ptime in ns: whole samples at 48 kHz, rounded up (measured with rtpL24pay)', async (t) => {
  t.same([0.125, 0.25, 0.333, 1, 4].map((p) => ptimeNs(p as 0.125)), [125_000, 250_000, 333_334, 1_000_000, 4_000_000]);
});

void t.test('bad values: 400 / INVALID_ARGUMENT naming the field', async (t) => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ channels: 0 }, /^body\/output\/channels must be >= 1/],
    [{ channels: 9 }, /^body\/output\/channels must be <= 8/],
    [{ channels: 2.5 }, /^body\/output\/channels must be integer/],
    [{ channels: '2' }, /^body\/output\/channels must be integer/],
    [{ encoding: 'L20' }, /^body\/output\/encoding must be one of "L24", "L16"; got "L20"/],
    [{ encoding: 24 }, /^body\/output\/encoding /],
    [{ ptime: 2 }, /^body\/output\/ptime must be one of 0.125, 0.25, 0.333, 1, 4; got 2/],
    [{ ptime: '1' }, /^body\/output\/ptime /],
    [{ payload_type: 95 }, /^body\/output\/payload_type must be >= 96/],
    [{ payload_type: 128 }, /^body\/output\/payload_type must be <= 127/],
    [{ dscp: -1 }, /^body\/output\/dscp must be >= 0/],
    [{ dscp: 64 }, /^body\/output\/dscp must be <= 63/],
    [{ ptime: 4, channels: 8 }, /^body\/output\/ptime 4 ms with 8 channels of L24 makes 4608-byte packets; at most 1440 bytes/],
    [{ ptime: 4, channels: 4, encoding: 'L16' }, /^body\/output\/ptime 4 ms with 4 channels of L16 makes 1536-byte packets/],
  ];
  for (const [output, message] of cases) {
    t.throws(() => parsePipelineSpec(withOutput(output), REST_BODY), message, JSON.stringify(output));
    try {
      parsePipelineSpec(withOutput(output), DOTTED);
    } catch (error) {
      t.ok(error instanceof ValidationError && error.grpcCode === 3 && error.message.startsWith('output.'), `gRPC: ${(error as Error).message}`);
    }
  }
  t.doesNotThrow(() => parsePipelineSpec(withOutput({ ptime: 4, channels: 2 })), '1152 bytes fit');
  t.doesNotThrow(() => parsePipelineSpec(withOutput({ ptime: 1, channels: 8 })), '1152 bytes fit');
});

void t.test('a multicast group outside 239.0.0.0/8 is accepted with a warning', async (t) => {
  const spec = parsePipelineSpec(withOutput({ host: '232.1.1.1' }));
  t.match(specWarnings(spec), [/^body\/output\/host 232\.1\.1\.1 is a multicast group outside 239\.0\.0\.0\/8/]);
  t.match(specWarnings(spec, DOTTED), [/^output\.host /]);
  t.same(specWarnings(parsePipelineSpec(withOutput({ host: '239.69.1.1' }))), []);
  t.same(specWarnings(parsePipelineSpec(withOutput({ host: '10.0.0.1' }))), []);
});

void t.test('the caps filter refuses a channel count outside 1-8 (defence in depth)', async (t) => {
  t.throws(() => processingCaps(9), UnsafeValueError);
  t.throws(() => processingCaps(1.5), UnsafeValueError);
});

void t.test('rtpbatch keeps the wake-up period of packets_per_send (1 ms packets) at every ptime', async (t) => {
  const packets = (ptime: number) => {
    const argv = compilePipeline(parsePipelineSpec(withOutput({ ptime, channels: 1 })), { statsIntervalMs: 1000, packetsPerSend: 4, clockSource: 'tai', jitterMs: 20 });
    const at = argv.indexOf('rtpbatch');
    return at < 0 ? 1 : Number(argv[at + 2]?.replace('packets=', ''));
  };
  t.same([0.125, 0.25, 0.333, 1, 4].map(packets), [16, 16, 12, 4, 1]);
});
