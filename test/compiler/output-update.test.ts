/**
 * Output changes a running child takes live (compiler/update.ts): a leg's destination of the same
 * IP family and kind (`out.host`, `out.port`, `out2.*`); anything else in the output, the legs'
 * on/off switches too, restarts the child. Only a switched-off leg compiles with a valve, closed.
 */
import t from 'tap';
import { compilePipeline } from '../../src/compiler/compile.js';
import { planUpdate } from '../../src/compiler/update.js';
import { parsePipelineSpec } from '../../src/spec/validate.js';
import { EXAMPLE } from '../fixtures/example.js';

const OPTIONS = { statsIntervalMs: 1000, packetsPerSend: 1, clockSource: 'tai', jitterMs: 20 };

function spec(output: Record<string, unknown>): ReturnType<typeof parsePipelineSpec> {
  return parsePipelineSpec({ ...EXAMPLE, output: { ...EXAMPLE.output, ...output } });
}

void t.test('a new destination of the same kind is live; another kind, family or option restarts', async (t) => {
  const base = spec({ host: '127.0.0.1' });
  t.same(planUpdate(base, spec({ host: '127.0.0.1', port: 6000 })), { kind: 'live', assignments: [{ element: 'out', property: 'port', value: '6000' }] });
  t.same(planUpdate(base, spec({ host: '10.1.2.3', port: 6000 })), {
    kind: 'live',
    assignments: [{ element: 'out', property: 'host', value: '10.1.2.3' }, { element: 'out', property: 'port', value: '6000' }],
  });
  const v6 = spec({ host: 'FD00::1' });
  t.same(planUpdate(v6, spec({ host: 'FD00::2' })), { kind: 'live', assignments: [{ element: 'out', property: 'host', value: 'fd00::2' }] }, 'IPv6 in lower case (the control grammar)');
  t.same(planUpdate(base, v6), { kind: 'restart', reasons: ['output'] }, 'IPv4 to IPv6');
  t.same(planUpdate(base, spec({ host: '239.69.1.1' })), { kind: 'restart', reasons: ['output'] }, 'unicast to multicast');
  t.same(planUpdate(base, spec({ host: 'receiver.example' })), { kind: 'restart', reasons: ['output'] }, 'a DNS name');
  t.same(planUpdate(base, spec({ host: '127.0.0.1', ttl: 3 })), { kind: 'restart', reasons: ['output'] }, 'the TTL');
  t.same(planUpdate(base, spec({ host: '127.0.0.1', port: 6000, encoding: 'L16' })), { kind: 'restart', reasons: ['output'] }, 'the encoding with a port');
});

void t.test('enabled restarts the child; only a leg that is off gets a valve, closed', async (t) => {
  const on = spec({});
  const off = spec({ enabled: false });
  t.same(planUpdate(on, off), { kind: 'restart', reasons: ['output'] });
  t.same(planUpdate(off, on), { kind: 'restart', reasons: ['output'] });
  t.same(planUpdate(on, spec({ enabled: true })), { kind: 'live', assignments: [] }, 'absent and true are the same');
  t.same(compilePipeline(spec({ enabled: true }), OPTIONS), compilePipeline(on, OPTIONS), 'enabled true compiles as absent');
  t.notOk(compilePipeline(on, OPTIONS).includes('valve'), 'a leg that sends has no valve');
  const argv = compilePipeline(off, OPTIONS);
  const gate = argv.indexOf('valve');
  t.same(argv.slice(gate - 1, gate + 6), ['!', 'valve', 'name=gate', 'drop=true', 'drop-mode=forward-sticky-events', '!', 'udpsink']);

  const legs = spec({ interface: 'eth0', redundant: { host: '239.69.2.1', interface: 'eth1' } });
  const secondOffSpec = spec({ interface: 'eth0', redundant: { host: '239.69.2.1', interface: 'eth1', enabled: false } });
  t.same(planUpdate(legs, secondOffSpec), { kind: 'restart', reasons: ['output'] }, 'the second leg alone');
  t.same(planUpdate(legs, spec({ interface: 'eth0', redundant: { enabled: true, host: '239.69.2.1', interface: 'eth1' } })), { kind: 'live', assignments: [] }, 'the leg: absent and true are the same');
  const secondOff = compilePipeline(secondOffSpec, OPTIONS);
  t.notOk(secondOff.includes('name=gate'), 'the first leg has no valve');
  const gate2 = secondOff.indexOf('name=gate2');
  t.same(secondOff.slice(gate2 - 3, gate2 + 5), ['legs.', '!', 'valve', 'name=gate2', 'drop=true', 'drop-mode=forward-sticky-events', '!', 'udpsink']);
  const bothOff = compilePipeline(spec({ interface: 'eth0', enabled: false, redundant: { host: '239.69.2.1', interface: 'eth1' } }), OPTIONS);
  t.ok(bothOff.includes('name=gate') && bothOff.includes('name=gate2'), 'the output off: both legs closed');
});
