import t from 'tap';
import { isMulticast, isValidHost } from '../../src/spec/host.js';
import { DOTTED, parsePipelineSpec } from '../../src/spec/validate.js';
import { ValidationError } from '../../src/errors.js';
import { EXAMPLE } from '../fixtures/example.js';

const withField = (patch: (spec: typeof EXAMPLE & Record<string, unknown>) => void): unknown => {
  const copy = structuredClone(EXAMPLE) as typeof EXAMPLE & Record<string, unknown>;
  patch(copy);
  return copy;
};

void t.test('the example request is valid and gets its defaults', async (t) => {
  const spec = parsePipelineSpec(EXAMPLE);
  t.same(spec.processing[0], { plugin: 'loudness-normalize', target: -23, true_peak: -1 });
  t.same(spec.processing[1], { plugin: 'eq', bands: [{ freq: 100, gain: -2, q: 1 }, { freq: 8000, gain: 1.5, q: 1 }] });
  t.equal(spec.output.ttl, 16);
  t.equal(spec.input.latency, 120);
  t.notOk('latency' in (parsePipelineSpec(EXAMPLE).output as object));
  const noLatency = withField((s) => { delete (s.input as Partial<typeof s.input>).latency; });
  t.equal(parsePipelineSpec(noLatency).input.latency, 120, 'latency defaults to 120 ms');
  t.same(parsePipelineSpec(withField((s) => { s.processing = []; })).processing, [], 'empty processing is accepted');
  t.same(parsePipelineSpec(withField((s) => { delete (s as Partial<typeof s>).processing; })).processing, [], 'missing processing is empty');
  t.same(EXAMPLE.processing[0], { plugin: 'loudness-normalize', target: -23 }, 'the input object is not changed');
  t.equal(parsePipelineSpec(EXAMPLE).priority, 'normal', 'priority defaults to normal');
  t.equal(parsePipelineSpec(withField((s) => { s.priority = 'high'; })).priority, 'high');
});

const cases: [string, unknown, string][] = [
  ['port too high', withField((s) => { s.input.port = 70000; }), 'body/input/port must be <= 65535'],
  ['unknown priority', withField((s) => { s.priority = 'urgent'; }), 'body/priority must be one of "high", "normal"; got "urgent"'],
  ['port below 1024', withField((s) => { s.input.port = 80; }), 'body/input/port must be >= 1024'],
  ['port as a string', withField((s) => { (s.input as Record<string, unknown>).port = '9000'; }), 'body/input/port must be integer'],
  ['fractional port', withField((s) => { s.input.port = 9000.5; }), 'body/input/port must be integer'],
  ['latency too low', withField((s) => { s.input.latency = 5; }), 'body/input/latency must be >= 20'],
  ['latency too high', withField((s) => { s.input.latency = 9000; }), 'body/input/latency must be <= 8000'],
  ['reconnect_ms too low', withField((s) => { (s.input as Record<string, unknown>).reconnect_ms = 49; }), 'body/input/reconnect_ms must be >= 50'],
  ['reconnect_ms too high', withField((s) => { (s.input as Record<string, unknown>).reconnect_ms = 10_001; }), 'body/input/reconnect_ms must be <= 10000'],
  ['fractional reconnect_ms', withField((s) => { (s.input as Record<string, unknown>).reconnect_ms = 300.5; }), 'body/input/reconnect_ms must be integer'],
  ['unknown input field', withField((s) => { (s.input as Record<string, unknown>).streamid = 'x'; }), 'body/input/streamid is not a known field'],
  ['passphrase too short', withField((s) => { (s.input as Record<string, unknown>).passphrase = 'secret123'; }), 'body/input/passphrase must NOT have fewer than 10 characters'],
  ['passphrase too long', withField((s) => { (s.input as Record<string, unknown>).passphrase = 'p'.repeat(80); }), 'body/input/passphrase must NOT have more than 79 characters'],
  ['passphrase with a newline', withField((s) => { (s.input as Record<string, unknown>).passphrase = 'correct\nhorse'; }), 'body/input/passphrase has characters that are not allowed'],
  ['passphrase not ASCII', withField((s) => { (s.input as Record<string, unknown>).passphrase = 'correcthörse'; }), 'body/input/passphrase has characters that are not allowed'],
  ['passphrase as a number', withField((s) => { (s.input as Record<string, unknown>).passphrase = 12345678901; }), 'body/input/passphrase must be string'],
  ['pbkeylen without a passphrase', withField((s) => { (s.input as Record<string, unknown>).pbkeylen = 16; }), 'body/input/pbkeylen is only allowed with body/input/passphrase'],
  ['pbkeylen 20', withField((s) => { Object.assign(s.input, { passphrase: 'correcthorse', pbkeylen: 20 }); }), 'body/input/pbkeylen must be one of 16, 24, 32; got 20'],
  ['pbkeylen as a string', withField((s) => { Object.assign(s.input, { passphrase: 'correcthorse', pbkeylen: '16' }); }), 'body/input/pbkeylen must be integer'],
  ['unknown top field', withField((s) => { s.extra = 1; }), 'body/extra is not a known field'],
  ['unknown plugin', withField((s) => { (s.processing as unknown[]) = [{ plugin: 'reverb' }]; }), 'body/processing/0/plugin must be one of loudness-normalize, eq; got "reverb"'],
  ['plugin missing', withField((s) => { (s.processing as unknown[]) = [{ target: -23 }]; }), 'body/processing/0/plugin is required'],
  ['target too low', withField((s) => { (s.processing as unknown[]) = [{ plugin: 'loudness-normalize', target: -80 }]; }), 'body/processing/0/target must be >= -70'],
  ['target missing', withField((s) => { (s.processing as unknown[]) = [{ plugin: 'loudness-normalize' }]; }), 'body/processing/0/target is required'],
  ['target as string', withField((s) => { (s.processing as unknown[]) = [{ plugin: 'loudness-normalize', target: '-23' }]; }), 'body/processing/0/target must be number'],
  ['eq field on loudness', withField((s) => { (s.processing as unknown[]) = [{ plugin: 'loudness-normalize', target: -23, bands: [] }]; }), 'body/processing/0/bands is not a known field'],
  ['freq too low', withField((s) => { (s.processing as unknown[]) = [{ plugin: 'eq', bands: [{ freq: 10, gain: 1 }] }]; }), 'body/processing/0/bands/0/freq must be >= 20'],
  ['gain too high', withField((s) => { (s.processing as unknown[]) = [{ plugin: 'eq', bands: [{ freq: 100, gain: 30 }] }]; }), 'body/processing/0/bands/0/gain must be <= 24'],
  ['no bands', withField((s) => { (s.processing as unknown[]) = [{ plugin: 'eq', bands: [] }]; }), 'body/processing/0/bands must NOT have fewer than 1 items'],
  ['17 bands', withField((s) => { (s.processing as unknown[]) = [{ plugin: 'eq', bands: Array.from({ length: 17 }, () => ({ freq: 100, gain: 1 })) }]; }), 'body/processing/0/bands must NOT have more than 16 items'],
  ['output host with a pipeline', withField((s) => { s.output.host = '127.0.0.1 ! fakesink'; }), 'body/output/host must be an IPv4 or IPv6 address or a DNS name'],
  ['output port 0', withField((s) => { s.output.port = 0; }), 'body/output/port must be >= 1'],
  ['output type', withField((s) => { s.output.type = 'srt'; }), 'body/output/type must be "rtp", got "srt"'],
  ['input type', withField((s) => { s.input.type = 'rist'; }), 'body/input/type must be "srt", got "rist"'],
  ['empty name', withField((s) => { s.name = ''; }), 'body/name must NOT have fewer than 1 characters'],
  ['long name', withField((s) => { s.name = 'x'.repeat(129); }), 'body/name must NOT have more than 128 characters'],
  ['name with a newline', withField((s) => { s.name = 'a\nb'; }), 'body/name has characters that are not allowed'],
  ['jitter ceiling too small', withField((s) => { Object.assign(s, { jitter_max_ms: 5 }); }), 'body/jitter_max_ms must be >= 10'],
  ['jitter ceiling not an integer', withField((s) => { Object.assign(s, { jitter_max_ms: '300' }); }), 'body/jitter_max_ms must be integer'],
  ['name missing', withField((s) => { delete (s as Partial<typeof s>).name; }), 'body/name is required'],
  ['not an object', 'hello', 'body must be object'],
  ['nothing', undefined, 'body must be object'],
  ['array', [EXAMPLE], 'body must be object'],
];

for (const [what, body, message] of cases) {
  void t.test(`rejects ${what}`, async (t) => {
    let caught: unknown;
    try {
      parsePipelineSpec(body);
    } catch (error) {
      caught = error;
    }
    t.type(caught, ValidationError);
    t.match((caught as Error | undefined)?.message, new RegExp(`^${message.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`));
  });
}

void t.test('a passphrase gets pbkeylen 16 unless it names one; no error message holds the secret', async (t) => {
  const spec = parsePipelineSpec(withField((s) => { Object.assign(s.input, { passphrase: 'correct horse ~!' }); }));
  t.same(spec.input, { type: 'srt', port: 9000, latency: 120, passphrase: 'correct horse ~!', pbkeylen: 16 });
  for (const pbkeylen of [16, 24, 32]) {
    t.equal(parsePipelineSpec(withField((s) => { Object.assign(s.input, { passphrase: 'p'.repeat(79), pbkeylen }); })).input.pbkeylen, pbkeylen);
  }
  t.notOk('pbkeylen' in parsePipelineSpec(EXAMPLE).input, 'no passphrase, no key length');
  for (const secret of ['secret123', `${'p'.repeat(79)}Q`, 'correct\nhorse!']) {
    let caught: unknown;
    try {
      parsePipelineSpec(withField((s) => { Object.assign(s.input, { passphrase: secret }); }));
    } catch (error) {
      caught = error;
    }
    t.type(caught, ValidationError);
    t.notOk((caught as Error).message.includes(secret.slice(0, 8)), `the message does not quote ${JSON.stringify(secret)}`);
  }
  t.throws(() => parsePipelineSpec(withField((s) => { Object.assign(s.input, { pbkeylen: 24 }); }), DOTTED), { message: 'input.pbkeylen is only allowed with input.passphrase' });
});

void t.test('gRPC and config paths are dotted', async (t) => {
  t.throws(() => parsePipelineSpec(withField((s) => { s.input.port = 70000; }), DOTTED), { message: 'input.port must be <= 65535' });
});

void t.test('hosts: IP literals and DNS names only', async (t) => {
  for (const good of ['239.69.1.1', '127.0.0.1', '::1', 'ff02::1', 'studio-a.example.org', 'localhost', 'host.']) t.ok(isValidHost(good), good);
  for (const bad of ['300.1.1.1', '1.2.3', 'a b', 'fe80::1%eth0', 'x"y', 'a\tb', '-bad.example', '', 'a..b', 'host!']) t.notOk(isValidHost(bad), JSON.stringify(bad));
  t.ok(isMulticast('239.69.1.1'));
  t.ok(isMulticast('ff02::1'));
  t.notOk(isMulticast('127.0.0.1'));
});
