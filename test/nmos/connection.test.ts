/**
 * IS-05 activations that restart the child (src/nmos/connection.ts), over the model of
 * test/helpers/nmos-model.ts with an output change that is stored at once and whose restart
 * ends only when the test says so (as PipelineRegistry.update: onStored after the durable write,
 * resolved once the new child is spawned):
 * - an immediate activation answers once the change is stored, while the restart is still under
 *   way; `active` and the IS-04 sender show the stored parameters from the answer on, and the
 *   sender stays `subscription.active` through the restart of an output that is on;
 * - a change refused before it is stored answers 500 and changes nothing;
 * - `subscription.receiver_id` is the activated receiver only while the sender is active and
 *   sends unicast (IS-04 sender.json), null when parked (master_enable false) or multicast.
 */
import t from 'tap';
import pino from 'pino';
import type { StreamSource } from '../../src/aes67/sessions.js';
import { SenderConnections, type OutputPatch } from '../../src/nmos/connection.js';
import { buildNodeApi } from '../../src/nmos/node-api.js';
import { NmosModel } from '../../src/nmos/resources.js';
import { INTERFACES, testStreams } from '../helpers/nmos-model.js';
import { NO_PTP } from '../../src/aes67/pmc.js';

const CONNECTION = '/x-nmos/connection/v1.1';
const NODE = '/x-nmos/node/v1.3';

/** The output a patch makes (a JSON merge patch of `output`: null removes `enabled`). */
function applyPatch(stream: StreamSource, patch: OutputPatch): StreamSource {
  const output: StreamSource['output'] = { ...stream.output, host: patch.host, port: patch.port };
  delete output.enabled;
  if (patch.enabled === false) output.enabled = false;
  if (output.redundant !== undefined && patch.redundant !== undefined) {
    output.redundant = { ...output.redundant, host: patch.redundant.host, port: patch.redundant.port };
    delete output.redundant.enabled;
    if (patch.redundant.enabled === false) output.redundant.enabled = false;
  }
  return { ...stream, output };
}

/** The fields of the Connection and Node API answers these tests read. */
interface Answer {
  master_enable?: boolean;
  receiver_id?: string | null;
  activation?: { mode: string | null; activation_time: string | null };
  transport_params?: object[];
  subscription?: { receiver_id: string | null; active: boolean };
  error?: string;
}

interface Harness {
  inject: (method: 'GET' | 'PATCH', url: string, payload?: object) => Promise<{ statusCode: number; body: Answer }>;
  senderOf: (pipelineId: string) => Promise<string>;
  /** Ends the restart of the last stored change (its promise resolves). */
  finishRestart: () => void;
  /** The next change is refused before it is stored. */
  refuseNext: (message: string) => void;
  stream: (pipelineId: string) => StreamSource;
  close: () => Promise<void>;
}

function harness(): Harness {
  const streams = testStreams();
  const restarts: (() => void)[] = [];
  let refusal: string | undefined;
  const model = new NmosModel({
    seed: 'test-host/state', label: 'test node', hostname: 'test-host', port: () => 3212,
    streams: () => streams, ptp: () => NO_PTP, traceable: false,
    findInterface: (name) => INTERFACES.find((i) => i.name === (name === '' ? 'veth0' : name)),
    defaultInterface: '', bind: '10.77.0.1', now: Date.now,
    receiverOf: (senderId, output) => connections.receiverOf(senderId, output),
    settling: (senderId) => connections.settling(senderId),
  });
  const log = pino({ level: 'silent' });
  const connections: SenderConnections = new SenderConnections({
    output: (id) => model.snapshot().outputs.get(id),
    sourceIp: (output, leg) => INTERFACES.find((i) => i.name === ((leg === 0 ? output.interface : output.redundant?.interface) ?? 'veth0'))!.address,
    checkOutput: () => undefined,
    changeOutput: async (stream, patch, onStored) => {
      await Promise.resolve();
      if (refusal !== undefined) {
        const message = refusal;
        refusal = undefined;
        throw new Error(message);
      }
      const at = streams.findIndex((s) => s.id === stream.id);
      // Stored: the registry's record is the new output; the restart ends the child (not live).
      streams[at] = { ...applyPatch(streams[at]!, patch), live: false };
      onStored();
      await new Promise<void>((resolve) => restarts.push(resolve));
      const restarted = streams[at];
      streams[at] = { ...restarted, live: restarted.output.enabled !== false };
    },
    now: Date.now,
    log,
  });
  const app = buildNodeApi({ log, model, sdp: (stream) => `v=0\r\ns=${stream.name}\r\n`, connections });
  return {
    async inject(method, url, payload) {
      const answer = await app.inject({ method, url, ...(payload === undefined ? {} : { payload }) });
      return { statusCode: answer.statusCode, body: answer.json<Answer>() };
    },
    async senderOf(pipelineId) {
      const senders = (await app.inject({ method: 'GET', url: `${NODE}/senders` })).json<{ id: string; tags: Record<string, string[]> }[]>();
      return senders.find((s) => s.tags['urn:x-audio-engine:id']?.[0] === pipelineId)!.id;
    },
    finishRestart: () => restarts.shift()?.(),
    refuseNext: (message) => {
      refusal = message;
    },
    stream: (id) => streams.find((s) => s.id === id)!,
    close: async () => {
      connections.close();
      await app.close();
    },
  };
}

void t.test('an immediate activation answers once stored; the restart goes on behind it', async (t) => {
  const h = harness();
  t.teardown(h.close);
  const sender = await h.senderOf('pl_one');
  const staged = `${CONNECTION}/single/senders/${sender}/staged`;

  const parked = await h.inject('PATCH', staged, { master_enable: false, activation: { mode: 'activate_immediate' } });
  t.equal(parked.statusCode, 200, 'answered while the restart has not ended');
  t.equal(parked.body.master_enable, false);
  t.match(parked.body.activation, { mode: 'activate_immediate', activation_time: /^\d+:\d+$/ });
  t.equal(h.stream('pl_one').output.enabled, false, 'the change is stored');
  t.equal((await h.inject('GET', `${CONNECTION}/single/senders/${sender}/active`)).body.master_enable, false, 'active shows the stored master_enable');
  t.match((await h.inject('GET', `${NODE}/senders/${sender}`)).body.subscription, { active: false, receiver_id: null }, 'an output switched off is not active during its restart');
  h.finishRestart();

  const receiver = '3f2e1d0c-0b0a-4909-8807-060504030201';
  const subscribed = await h.inject('PATCH', staged, {
    master_enable: true, receiver_id: receiver, transport_params: [{ destination_ip: '192.0.2.1' }], activation: { mode: 'activate_immediate' },
  });
  t.equal(subscribed.statusCode, 200, 'answered while the restart has not ended');
  t.equal(h.stream('pl_one').live, false, 'the child is still being restarted');
  const active = (await h.inject('GET', `${CONNECTION}/single/senders/${sender}/active`)).body;
  t.match(active, { master_enable: true, receiver_id: receiver, transport_params: [{ destination_ip: '192.0.2.1', rtp_enabled: true }] }, 'active shows the stored parameters');
  t.same((await h.inject('GET', `${NODE}/senders/${sender}`)).body.subscription, { receiver_id: receiver, active: true },
    'the IS-04 sender stays active through the restart, subscribed to the unicast receiver');
  h.finishRestart();
  await new Promise((resolve) => setImmediate(resolve));
  t.same((await h.inject('GET', `${NODE}/senders/${sender}`)).body.subscription, { receiver_id: receiver, active: true }, 'and after it');

  const reparked = await h.inject('PATCH', staged, { master_enable: false, activation: { mode: 'activate_immediate' } });
  t.equal(reparked.statusCode, 200);
  t.same((await h.inject('GET', `${NODE}/senders/${sender}`)).body.subscription, { receiver_id: null, active: false },
    'parked: no receiver_id in IS-04 (only set while active), though staged and active keep it');
  t.equal((await h.inject('GET', `${CONNECTION}/single/senders/${sender}/active`)).body.receiver_id, receiver);
  h.finishRestart();
});

void t.test('receiver_id is null in IS-04 for a multicast destination', async (t) => {
  const h = harness();
  t.teardown(h.close);
  const sender = await h.senderOf('pl_two');
  const answer = await h.inject('PATCH', `${CONNECTION}/single/senders/${sender}/staged`, {
    master_enable: true, receiver_id: '3f2e1d0c-0b0a-4909-8807-060504030201',
    transport_params: [{ destination_ip: '233.252.0.1' }, { destination_ip: '233.252.0.2' }], activation: { mode: 'activate_immediate' },
  });
  t.equal(answer.statusCode, 200);
  t.same((await h.inject('GET', `${NODE}/senders/${sender}`)).body.subscription, { receiver_id: null, active: true });
  h.finishRestart();
});

void t.test('a change refused before it is stored: 500, nothing changes', async (t) => {
  const h = harness();
  t.teardown(h.close);
  const sender = await h.senderOf('pl_one');
  const before = h.stream('pl_one').output;
  h.refuseNext('the host cannot carry it');
  const answer = await h.inject('PATCH', `${CONNECTION}/single/senders/${sender}/staged`, { master_enable: false, activation: { mode: 'activate_immediate' } });
  t.equal(answer.statusCode, 500);
  t.match(answer.body.error, /the host cannot carry it/);
  t.same(h.stream('pl_one').output, before, 'the output is unchanged');
  const active = (await h.inject('GET', `${CONNECTION}/single/senders/${sender}/active`)).body;
  t.equal(active.master_enable, true);
  t.match(active.activation, { mode: null });
  t.match((await h.inject('GET', `${NODE}/senders/${sender}`)).body.subscription, { active: true });
});
