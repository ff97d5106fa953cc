/**
 * ST 2022-7 outputs in the spec and the compiler: the redundant leg's validation (its port
 * defaults to the output's; a leg equal to the primary is refused naming output.redundant.host),
 * the gRPC mapping, a change of the leg restarts the child, and the argv: a tee after rtpbatch
 * feeding `out` and `out2` with each leg's host, port and interface and the output's TTL and DSCP.
 */
import t from 'tap';
import { compilePipeline, legInterfacesOf } from '../../src/compiler/compile.js';
import { planUpdate } from '../../src/compiler/update.js';
import { ValidationError } from '../../src/errors.js';
import { createRequestToJson } from '../../src/grpc/from-proto.js';
import { DOTTED, parsePipelineSpec } from '../../src/spec/validate.js';
import { EXAMPLE } from '../fixtures/example.js';

const OPTIONS = { statsIntervalMs: 1000, packetsPerSend: 1, clockSource: 'tai', jitterMs: 20 };

function withLeg(redundant: Record<string, unknown>, output: Record<string, unknown> = {}): unknown {
  return { ...EXAMPLE, output: { ...EXAMPLE.output, interface: 'eth0', ...output, redundant } };
}

void t.test('a tee after rtpbatch, one udpsink per leg', async (t) => {
  const spec = parsePipelineSpec(withLeg({ host: '239.69.2.1', interface: 'eth1' }, { dscp: 46, ttl: 8 }));
  t.same(spec.output.redundant, { host: '239.69.2.1', port: 5004, interface: 'eth1' }, 'port defaults to the output\'s');
  const argv = compilePipeline(spec, OPTIONS);
  const from = argv.indexOf('rtpbatch');
  const to = argv.indexOf('pipelinestats');
  t.same(argv.slice(from, to), [
    'rtpbatch', 'name=batch', 'packets=1', 'media-clock=true',
    '!', 'tee', 'name=legs',
    '!', 'udpsink', 'name=out', 'host=239.69.1.1', 'port=5004', 'ttl-mc=8', 'multicast-iface=eth0', 'auto-multicast=true', 'qos-dscp=46', 'sync=true', 'processing-deadline=0', 'async=false', 'bind-port=61004',
    'legs.', '!', 'udpsink', 'name=out2', 'host=239.69.2.1', 'port=5004', 'ttl-mc=8', 'multicast-iface=eth1', 'auto-multicast=true', 'qos-dscp=46', 'sync=true', 'processing-deadline=0', 'async=false', 'bind-port=61004',
  ]);
  const stdin = compilePipeline({ ...spec, input: { type: 'stdin' } } as never, OPTIONS);
  t.ok(stdin.includes('name=out2'));
  t.equal(stdin[stdin.indexOf('name=out2') + 9], 'async=false', 'the second leg never prerolls, even where out does');
  t.equal(stdin[stdin.indexOf('name=out') + 9], 'async=true');
});

void t.test('the leg validated like the output; a leg equal to the primary names output.redundant.host', async (t) => {
  const unicast = parsePipelineSpec(withLeg({ host: '10.1.0.9', port: 6000 }, { host: '10.0.0.9' }));
  t.same(unicast.output.redundant, { host: '10.1.0.9', port: 6000 });
  t.throws(() => parsePipelineSpec(withLeg({ host: '239.69.1.1', interface: 'eth0' })), new ValidationError('body/output/redundant/host 239.69.1.1 port 5004 is the primary leg itself; a redundant leg needs another destination or, for multicast, another interface'));
  t.throws(() => parsePipelineSpec(withLeg({ host: '10.0.0.9', interface: 'eth1' }, { host: '10.0.0.9' })), { message: /^body\/output\/redundant\/host .*primary leg itself/ }, 'unicast: the interface does not make it another leg');
  t.same(parsePipelineSpec(withLeg({ host: '239.69.1.1', interface: 'eth1' })).output.redundant?.interface, 'eth1', 'the same group on another network is a leg');
  t.throws(() => parsePipelineSpec(withLeg({ host: '239.69.1.1' }, { interface: undefined }), DOTTED), { message: /^output\.redundant\.host / }, 'neither names an interface');
  t.throws(() => parsePipelineSpec(withLeg({ host: '1.2.3.4 ! fakesink' })), { message: /output\/redundant\/host/ });
  t.throws(() => parsePipelineSpec(withLeg({ host: '239.69.2.1', port: 0 })), { message: /output\/redundant\/port/ });
  t.throws(() => parsePipelineSpec(withLeg({ host: '239.69.2.1', interface: 'eth1 x' })), { message: /output\/redundant\/interface/ });
  t.throws(() => parsePipelineSpec(withLeg({ host: '239.69.2.1', ttl: 3 })), { message: /output\/redundant/ }, 'no other field');
  t.throws(() => parsePipelineSpec(withLeg({ port: 5006 })), { message: /output\/redundant/ }, 'host required');
});

void t.test('gRPC carries the leg; a change of the leg restarts the child', async (t) => {
  const json = createRequestToJson({
    name: 'x',
    input: { type: 'srt', port: 9000 },
    processing: [],
    output: { type: 'rtp', host: '239.69.1.1', port: 5004, redundant: { host: '239.69.2.1', interface: 'eth1' } },
  });
  t.same(parsePipelineSpec(json, DOTTED).output.redundant, { host: '239.69.2.1', interface: 'eth1', port: 5004 });
  const one = parsePipelineSpec(EXAMPLE);
  const two = parsePipelineSpec(withLeg({ host: '239.69.2.1', interface: 'eth1' }, { interface: undefined }));
  t.same(planUpdate(one, two), { kind: 'restart', reasons: ['output'] });
  t.same(planUpdate(two, parsePipelineSpec(withLeg({ host: '239.69.3.1', interface: 'eth1' }, { interface: undefined }))),
    { kind: 'live', assignments: [{ element: 'out2', property: 'host', value: '239.69.3.1' }] }, 'a new leg destination of the same kind: live');
  t.same(planUpdate(two, parsePipelineSpec(withLeg({ host: '239.69.2.1', interface: 'eth2' }, { interface: undefined }))), { kind: 'restart', reasons: ['output'] }, 'a new leg interface: restart');
  t.same(planUpdate(two, one), { kind: 'restart', reasons: ['output'] });
});

void t.test('the interfaces whose links the engine watches: each multicast leg with an interface', async (t) => {
  const both = parsePipelineSpec(withLeg({ host: '239.69.2.1', interface: 'eth1' }));
  t.same(legInterfacesOf(both.output), [{ sink: 'out', interface: 'eth0' }, { sink: 'out2', interface: 'eth1' }]);
  const noPrimaryInterface = parsePipelineSpec({ ...EXAMPLE, output: { ...EXAMPLE.output, redundant: { host: '239.69.2.1', interface: 'eth1' } } });
  t.same(legInterfacesOf(noPrimaryInterface.output), [{ sink: 'out2', interface: 'eth1' }], 'a leg without an interface sends where the routes say');
  const unicast = parsePipelineSpec(withLeg({ host: '10.1.0.9', interface: 'eth1' }, { host: '10.0.0.9' }));
  t.same(legInterfacesOf(unicast.output), [], "a unicast leg's route picks its interface");
  t.same(legInterfacesOf(parsePipelineSpec(EXAMPLE).output), [], 'one leg, no interface');
});

void t.test('an interface name that is a path step is refused, naming the field', async (t) => {
  for (const name of ['.', '..']) {
    t.throws(() => parsePipelineSpec(withLeg({ host: '239.69.2.1', interface: name })), { name: 'ValidationError', path: ['output', 'redundant', 'interface'] }, name);
    t.throws(() => parsePipelineSpec(withLeg({ host: '239.69.2.1', interface: 'eth1' }, { interface: name })), { name: 'ValidationError', path: ['output', 'interface'] }, name);
  }
});
