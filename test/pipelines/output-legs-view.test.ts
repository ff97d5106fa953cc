/**
 * The output legs clients see (pipelines/output-legs-view.ts): a leg's state from the child's
 * send warnings (OutputLegs) while a child runs, `idle` without one, and `off` for a leg that is
 * switched off (`output.enabled`, `output.redundant.enabled`), running child or not.
 */
import t from 'tap';
import type { ChildState } from '../../src/supervisor/state.js';
import { parsePipelineSpec } from '../../src/spec/validate.js';
import { OutputLegs } from '../../src/stats/output-legs.js';
import { outputLegViews } from '../../src/pipelines/output-legs-view.js';

function output(extra: Record<string, unknown>, leg: Record<string, unknown> = {}): ReturnType<typeof parsePipelineSpec>['output'] {
  return parsePipelineSpec({
    name: 'Legs',
    input: { type: 'srt', port: 9000 },
    output: { type: 'rtp', host: '239.69.11.1', port: 5004, ...extra, redundant: { host: '239.69.12.1', interface: 'eth1', ...leg } },
  }).output;
}

function supervisor(state: ChildState, legs = new OutputLegs()): { legs: OutputLegs; snapshot: () => { state: ChildState } } {
  return { legs, snapshot: () => ({ state }) };
}

const states = (views: { state: string }[]): string[] => views.map((v) => v.state);

void t.test('a leg switched off is off; the others as their sinks say', async (t) => {
  const legs = new OutputLegs();
  legs.onWarning({ kind: 'udp-send-warning', element: 'out2', client: '239.69.12.1:5004', reason: 'Error sending message: Network is unreachable' });
  t.same(states(outputLegViews(output({}), supervisor('running', legs))), ['sending', 'failed'], 'both on: the failed leg is failed');
  const second = outputLegViews(output({}, { enabled: false }), supervisor('running', legs));
  t.same(states(second), ['sending', 'off'], 'the second leg off: off, no error');
  t.equal(second[1]?.error, null);
  t.same(states(outputLegViews(output({ enabled: false }), supervisor('running'))), ['off', 'off'], 'the output off: both legs');
  t.same(states(outputLegViews(output({ enabled: true }, { enabled: true }), supervisor('running'))), ['sending', 'sending'], 'true is on');
  t.same(states(outputLegViews(output({}, { enabled: false }), supervisor('backoff'))), ['idle', 'off'], 'no child: idle, the switched-off leg still off');
});
