/**
 * An NMOS model and HTTP edge of two outputs, as the engine builds them (src/nmos), without the
 * engine: a single-leg multicast output on `veth0` and an ST 2022-7 output whose second leg sends
 * from `veth1`. For the tests of the Node and Connection API routes and of registration.
 */
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { NO_PTP } from '../../src/aes67/pmc.js';
import type { StreamSource } from '../../src/aes67/sessions.js';
import { SenderConnections } from '../../src/nmos/connection.js';
import { buildNodeApi } from '../../src/nmos/node-api.js';
import { NmosModel } from '../../src/nmos/resources.js';
import { parsePipelineSpec } from '../../src/spec/validate.js';
import { EXAMPLE } from '../fixtures/example.js';

export const INTERFACES = [
  { name: 'veth0', address: '10.77.0.1', mac: '02:00:00:00:00:01' },
  { name: 'veth1', address: '10.77.1.1', mac: '02:00:00:00:00:02' },
];

export function testStreams(): StreamSource[] {
  const single = parsePipelineSpec({ ...EXAMPLE, name: 'one leg', output: { ...EXAMPLE.output, interface: 'veth0' } });
  const dual = parsePipelineSpec({ ...EXAMPLE, name: 'two legs', output: { type: 'rtp', host: '239.69.1.2', port: 5004, interface: 'veth0', redundant: { host: '239.69.2.2', interface: 'veth1' } } });
  return [
    { id: 'pl_one', name: single.name, output: single.output, live: true },
    { id: 'pl_two', name: dual.name, output: dual.output, live: true },
  ];
}

export function testModel(streams: StreamSource[] = testStreams()): NmosModel {
  return new NmosModel({
    seed: 'test-host/state',
    label: 'test node',
    hostname: 'test-host',
    port: () => 3212,
    streams: () => streams,
    ptp: () => NO_PTP,
    traceable: false,
    findInterface: (name) => INTERFACES.find((i) => i.name === (name === '' ? 'veth0' : name)),
    defaultInterface: '',
    bind: '10.77.0.1',
    now: Date.now,
  });
}

/** The Node and Connection API of testModel's outputs (activations refused: no engine behind). */
export function testNodeApi(model = testModel()): FastifyInstance {
  const log = pino({ level: 'silent' });
  const connections = new SenderConnections({
    output: (id) => model.snapshot().outputs.get(id),
    sourceIp: (output, leg) => INTERFACES.find((i) => i.name === ((leg === 0 ? output.interface : output.redundant?.interface) ?? 'veth0'))!.address,
    checkOutput: () => undefined,
    changeOutput: () => Promise.reject(new Error('no engine in this test')),
    now: Date.now,
    log,
  });
  return buildNodeApi({ log, model, sdp: (stream) => `v=0\r\ns=${stream.name}\r\n`, connections });
}
