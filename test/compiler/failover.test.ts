/**
 * A backup input in the spec and the compiler (docs/failover.md): the argv of a spec with a
 * backup (its own SRT chain linked to `bridge.backup`, its passphrase read from descriptor 5 and
 * never on the command line, the policy as the bridge's properties), a spec without one compiled
 * exactly as before, the validation errors that name the field, the gRPC mapping and which
 * changes go live.
 */
import t from 'tap';
import { compilePipeline, compileSecrets } from '../../src/compiler/compile.js';
import { planUpdate } from '../../src/compiler/update.js';
import { ValidationError } from '../../src/errors.js';
import { createRequestToJson, updateRequestToPatch } from '../../src/grpc/from-proto.js';
import { applyPipelinePatch } from '../../src/spec/patch.js';
import { DOTTED, parsePipelineSpec, REST_BODY } from '../../src/spec/validate.js';
import { EXAMPLE } from '../fixtures/example.js';

const OPTIONS = { statsIntervalMs: 1000, packetsPerSend: 1, clockSource: 'tai', jitterMs: 20 };
const BACKUP_SECRET = 'backup-secret-1234';
const MAIN_SECRET = 'main-secret-5678';

const TS_AUDIO = 'audio/mpeg;audio/x-lpcm;audio/x-private-ts-lpcm;audio/x-smpte-302m;audio/x-ac3;audio/x-eac3;audio/x-ac4;audio/x-dts;audio/x-opus';
const F32 = 'audio/x-raw,format=F32LE,layout=interleaved,rate=48000,channels=2';

void t.test('a backup compiles to its own SRT chain on bridge.backup; its passphrase only on fd 5', async (t) => {
  const plain = compilePipeline(parsePipelineSpec(EXAMPLE), OPTIONS);
  const spec = parsePipelineSpec({ ...EXAMPLE, backup: { type: 'srt', port: 9001, latency: 200, passphrase: BACKUP_SECRET }, failover: { loss_ms: 500, silence_s: 2.5 } });
  t.same(spec.failover, { silence_dbfs: -50, silence_s: 2.5, loss_ms: 500, return_s: 10, fallback_on_silence: false }, 'defaults filled');
  t.equal(spec.backup?.pbkeylen, 16, 'the backup\'s key length defaults like the input\'s');
  const argv = compilePipeline(spec, OPTIONS);

  // Everything up to the control element is the plain graph, with the policy on the bridge.
  const bridgeProps = ['failover-loss=500000000', 'failover-silence-level=-50', 'failover-silence=2500000000', 'failover-return=10000000000', 'fallback-on-silence=false'];
  const at = plain.indexOf('channels=2', plain.indexOf('clockbridge')) + 1;
  t.same(argv.slice(0, plain.length + bridgeProps.length), [...plain.slice(0, at), ...bridgeProps, ...plain.slice(at)], 'main graph unchanged but for the policy');
  t.same(argv.slice(plain.length + bridgeProps.length), [
    'srtsrc', 'name=src2', 'mode=listener', 'localaddress=0.0.0.0', 'localport=9001', 'latency=200', 'poll-timeout=100', 'keep-listening=true', 'wait-for-connection=true', 'pbkeylen=16',
    '!', 'typefind', 'name=typefind2',
    '!', 'tsdemux', 'name=demux2',
    '!', TS_AUDIO,
    '!', 'aacframer', 'name=framer2',
    '!', 'decodebin', 'name=decode2',
    '!', 'audioconvert', 'name=inconvert2',
    '!', 'audioresample', 'name=resample2',
    '!', F32,
    '!', 'bridge.backup',
    'srtaccess', 'name=access2', 'source=src2', 'passphrase-fd=5',
  ]);
  t.notOk(argv.some((token) => token.includes(BACKUP_SECRET)), 'the secret is not in argv');
  const quick = compilePipeline(parsePipelineSpec({ ...EXAMPLE, input: { ...EXAMPLE.input, reconnect_ms: 300 }, backup: { type: 'srt', port: 9001, reconnect_ms: 200 } }), OPTIONS);
  t.ok(quick.join(' ').includes('srtaccess name=access source=src reconnect-ms=300'), 'the input\'s reconnect_ms on its srtaccess');
  t.ok(quick.join(' ').includes('srtaccess name=access2 source=src2 reconnect-ms=200'), 'the backup\'s on access2');
  t.same(compileSecrets(spec), [null, null, new TextEncoder().encode(BACKUP_SECRET)], 'fd 3 closed, fd 4 the control channel, fd 5 the backup\'s');

  const both = parsePipelineSpec({ ...EXAMPLE, input: { ...EXAMPLE.input, passphrase: MAIN_SECRET }, backup: { type: 'srt', port: 9001, passphrase: BACKUP_SECRET } });
  const bothArgv = compilePipeline(both, OPTIONS);
  t.notOk(bothArgv.some((token) => token.includes(BACKUP_SECRET) || token.includes(MAIN_SECRET)));
  t.same(compileSecrets(both), [new TextEncoder().encode(MAIN_SECRET), null, new TextEncoder().encode(BACKUP_SECRET)]);
  t.notOk(bothArgv.includes('failover-loss=300000000'), 'a backup without a policy: the element\'s defaults, nothing on the bridge');
});

void t.test('a spec without backup compiles exactly as before', async (t) => {
  const spec = parsePipelineSpec(EXAMPLE);
  t.equal(spec.backup, undefined);
  t.equal(spec.failover, undefined);
  const argv = compilePipeline(spec, OPTIONS);
  t.notOk(argv.some((token) => /failover|fallback|backup|src2|select=/.test(token)));
  t.equal(argv.at(-1), 'fd=4', 'the control element ends the argv as before');
  t.same(compileSecrets(spec), []);
});

function messageOf(f: () => unknown): string {
  try {
    f();
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  return 'no error';
}

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

void t.test('validation names the field', async (t) => {
  const cases: [unknown, string][] = [
    [{ ...EXAMPLE, backup: { type: 'srt', port: 9000 } }, 'body/backup/port must differ from body/input/port (9000)'],
    [{ ...EXAMPLE, backup: { type: 'srt', port: 0 } }, 'body/backup/port'],
    [{ ...EXAMPLE, backup: { type: 'srt' } }, 'body/backup/port'],
    [{ ...EXAMPLE, backup: { type: 'srt', port: 9001, passphrase: 'short' } }, 'body/backup/passphrase'],
    [{ ...EXAMPLE, failover: { loss_ms: 300 } }, 'body/failover is only allowed with'],
    [{ ...EXAMPLE, backup: { type: 'srt', port: 9001 }, failover: { loss_ms: 49 } }, 'body/failover/loss_ms must be >= 50'],
    [{ ...EXAMPLE, backup: { type: 'srt', port: 9001 }, failover: { loss_ms: 10001 } }, 'body/failover/loss_ms must be <= 10000'],
    [{ ...EXAMPLE, backup: { type: 'srt', port: 9001 }, failover: { loss_ms: 300.5 } }, 'body/failover/loss_ms'],
    [{ ...EXAMPLE, backup: { type: 'srt', port: 9001 }, failover: { silence_dbfs: -91 } }, 'body/failover/silence_dbfs must be >= -90'],
    [{ ...EXAMPLE, backup: { type: 'srt', port: 9001 }, failover: { silence_dbfs: 1 } }, 'body/failover/silence_dbfs must be <= 0'],
    [{ ...EXAMPLE, backup: { type: 'srt', port: 9001 }, failover: { silence_s: 0.5 } }, 'body/failover/silence_s must be >= 1'],
    [{ ...EXAMPLE, backup: { type: 'srt', port: 9001 }, failover: { silence_s: 601 } }, 'body/failover/silence_s must be <= 600'],
    [{ ...EXAMPLE, backup: { type: 'srt', port: 9001 }, failover: { return_s: -1 } }, 'body/failover/return_s must be >= 0'],
    [{ ...EXAMPLE, backup: { type: 'srt', port: 9001 }, failover: { return_s: 601 } }, 'body/failover/return_s must be <= 600'],
    [{ ...EXAMPLE, backup: { type: 'srt', port: 9001 }, failover: { fallback_on_silence: 'yes' } }, 'body/failover/fallback_on_silence'],
    [{ ...EXAMPLE, backup: { type: 'srt', port: 9001 }, failover: { other: 1 } }, 'body/failover/other'],
  ];
  for (const [body, message] of cases) {
    t.throws(() => parsePipelineSpec(body), ValidationError, message);
    t.match(messageOf(() => parsePipelineSpec(body)), new RegExp(`^${escape(message)}`), message);
  }
  t.throws(() => parsePipelineSpec({ ...EXAMPLE, backup: { type: 'srt', port: 9000 } }, DOTTED), new ValidationError('backup.port must differ from input.port (9000)'), 'gRPC: dotted');
  t.notMatch(messageOf(() => parsePipelineSpec({ ...EXAMPLE, backup: { type: 'srt', port: 9001, passphrase: 'shrtsec' } })), /shrtsec/, 'no error holds the secret');
});

void t.test('gRPC carries backup and failover; remove_backup drops both', async (t) => {
  const json = createRequestToJson({
    name: 'x',
    input: { type: 'srt', port: 9000 },
    backup: { type: 'srt', port: 9001, latency: 150 },
    failover: { loss_ms: 400, fallback_on_silence: true },
    processing: [],
    output: { type: 'rtp', host: '239.69.1.1', port: 5004 },
  });
  const spec = parsePipelineSpec(json, DOTTED);
  t.same(spec.backup, { type: 'srt', port: 9001, latency: 150 });
  t.same(spec.failover, { silence_dbfs: -50, silence_s: 10, loss_ms: 400, return_s: 10, fallback_on_silence: true });
  const removed = applyPipelinePatch(spec, updateRequestToPatch({ id: 'pl_x', processing: undefined, remove_backup: true }), DOTTED);
  t.equal(removed.backup, undefined);
  t.equal(removed.failover, undefined);
});

void t.test('PATCH: a policy change is live on the bridge, a backup change restarts', async (t) => {
  const spec = parsePipelineSpec({ ...EXAMPLE, backup: { type: 'srt', port: 9001 }, failover: {} });
  const policy = applyPipelinePatch(spec, { failover: { loss_ms: 1000, silence_dbfs: -40.5 } }, REST_BODY);
  t.same(planUpdate(spec, policy), {
    kind: 'live',
    assignments: [
      { element: 'bridge', property: 'failover-loss', value: '1000000000' },
      { element: 'bridge', property: 'failover-silence-level', value: '-40.5' },
    ],
  });
  const port = applyPipelinePatch(spec, { backup: { port: 9002 } }, REST_BODY);
  t.same(planUpdate(spec, port), { kind: 'restart', reasons: ['backup'] });
  const added = applyPipelinePatch(parsePipelineSpec(EXAMPLE), { backup: { type: 'srt', port: 9002 } }, REST_BODY);
  t.same(planUpdate(parsePipelineSpec(EXAMPLE), added), { kind: 'restart', reasons: ['backup'] });
  const removed = applyPipelinePatch(spec, { backup: null }, REST_BODY);
  t.equal(removed.failover, undefined, 'the policy goes with the backup');
  t.same(planUpdate(spec, removed), { kind: 'restart', reasons: ['backup'] });
  t.throws(() => applyPipelinePatch(spec, { backup: { port: 9000 } }, REST_BODY), { message: /^body\/backup\/port must differ/ });
});

void t.test('a fallback compiles to the bridge\'s fallback-file: the decoded copy, never the user\'s path', async (t) => {
  const spec = parsePipelineSpec({ ...EXAMPLE, fallback: { type: 'file', path: '/srv/fallback/id ent!.flac' }, failover: { loss_ms: 200 } });
  t.same(spec.fallback, { type: 'file', path: '/srv/fallback/id ent!.flac', loop: true });
  const argv = compilePipeline({ ...spec, fallbackFile: '/var/lib/audio-engine/state/fallback/pl_abcdefabcdef-0123456789abcdef.f32' }, OPTIONS);
  const bridge = argv.indexOf('clockbridge');
  t.same(argv.slice(argv.indexOf('channels=2', bridge) + 1, argv.indexOf('!', bridge)), [
    'fallback-file=/var/lib/audio-engine/state/fallback/pl_abcdefabcdef-0123456789abcdef.f32',
    'failover-loss=200000000', 'failover-silence-level=-50', 'failover-silence=10000000000', 'failover-return=10000000000', 'fallback-on-silence=false',
  ], 'policy allowed with a fallback alone');
  t.notOk(argv.some((token) => token.includes('id ent')), 'the user\'s path is not in argv');
  t.notOk(argv.includes('bridge.backup'));
  t.throws(() => compilePipeline({ ...spec, fallbackFile: '/state/x y.f32' }, OPTIONS), { message: /fallback-file/ }, 'a copy path with a space is refused');
  t.throws(() => compilePipeline({ ...spec, fallbackFile: '/state/../x.f32' }, OPTIONS), { message: /fallback-file/ });
  const changed = applyPipelinePatch(spec, { fallback: { path: '/srv/fallback/other.wav' } }, REST_BODY);
  t.same(planUpdate(spec, changed), { kind: 'restart', reasons: ['fallback'] }, 'a fallback change restarts (fallback-file is read at READY)');
  const removed = applyPipelinePatch(spec, { fallback: null }, REST_BODY);
  t.equal(removed.failover, undefined, 'the policy goes with the last of backup and fallback');
  for (const [fallback, message] of [
    [{ type: 'file', path: 'relative.flac' }, 'body/fallback/path'],
    [{ type: 'file', path: '/srv/fallback/../etc/passwd' }, 'body/fallback/path must be a normalised absolute path'],
    [{ type: 'file', path: '/srv//x.flac' }, 'body/fallback/path must be a normalised absolute path'],
    [{ type: 'file', path: '/srv/x\n.flac' }, 'body/fallback/path'],
    [{ type: 'file', path: '/srv/x.flac', loop: false }, 'body/fallback/loop'],
    [{ type: 'url', path: '/srv/x.flac' }, 'body/fallback/type'],
  ] as const) {
    t.match(messageOf(() => parsePipelineSpec({ ...EXAMPLE, fallback })), new RegExp(`^${escape(message)}`), message);
  }
});
