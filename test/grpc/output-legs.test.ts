/**
 * Pipeline.output_legs over gRPC: the view's legs through pipelineToProto and the generated
 * message's wire form (encode, decode), null fields absent.
 */
import t from 'tap';
import { Pipeline } from '../../src/gen/svc/v1/engine.js';
import { pipelineToProto } from '../../src/grpc/to-proto.js';
import { parsePipelineSpec } from '../../src/spec/validate.js';
import type { PipelineView } from '../../src/pipelines/registry.js';

void t.test('both legs, one failed, survive the wire', async (t) => {
  const spec = parsePipelineSpec({
    name: 'Two Legs',
    input: { type: 'srt', port: 9000 },
    output: { type: 'rtp', host: '239.69.11.1', port: 5004, redundant: { host: '239.69.12.1', interface: 'eth1' } },
  });
  const view = {
    id: 'pl_0123456789ab', name: spec.name, status: 'active', created_at: '2026-11-27T05:00:00.000Z',
    input: { type: 'srt', port: 9000, latency: 120 }, processing: [], output: spec.output, priority: 'normal',
    state: 'running', pid: 42, restarts: 0, last_error: null, exit_code: null, exit_signal: null, state_since: '2026-11-27T05:00:00.000Z',
    next_retry_at: null, input_state: 'receiving', silence_seconds: 0, srt_connected: true, realtime_ratio: 1, behind: false, clock: null, version: 1,
    active_input: 'main', selection: 'auto', inputs: { main: { connected: true, level_dbfs: -20, silent_seconds: 0 } },
    output_legs: [
      { leg: 'primary', host: '239.69.11.1', port: 5004, interface: null, state: 'sending', error: null },
      { leg: 'redundant', host: '239.69.12.1', port: 5004, interface: 'eth1', state: 'failed', error: 'Error sending message: Network is unreachable' },
    ],
  } as unknown as PipelineView;
  const decoded = Pipeline.decode(Pipeline.encode(pipelineToProto(view, 'v=0\r\n')).finish());
  t.same(decoded.output_legs, [
    { leg: 'primary', host: '239.69.11.1', port: 5004, state: 'sending' },
    { leg: 'redundant', host: '239.69.12.1', port: 5004, interface: 'eth1', state: 'failed', error: 'Error sending message: Network is unreachable' },
  ]);
});
