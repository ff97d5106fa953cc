import t from 'tap';
import { planUpdate } from '../../src/compiler/update.js';
import { ValidationError } from '../../src/errors.js';
import { applyPipelinePatch, applyProcessingPatch, mergePatch } from '../../src/spec/patch.js';
import { DOTTED, parsePipelineSpec, REST_BODY } from '../../src/spec/validate.js';
import { EXAMPLE } from '../fixtures/example.js';

const base = parsePipelineSpec({
  ...EXAMPLE,
  input: { type: 'srt', port: 9000, passphrase: 'correct horse battery' },
  processing: [{ plugin: 'loudness-normalize', target: -23, true_peak: -2 }, { plugin: 'eq', bands: [{ freq: 100, gain: -2 }] }],
});

void t.test('RFC 7396 merge', async (t) => {
  t.same(mergePatch({ a: 1, b: { c: 2, d: 3 } }, { b: { c: null, e: 4 }, f: [1] }), { a: 1, b: { d: 3, e: 4 }, f: [1] });
  t.same(mergePatch({ a: [1, 2] }, { a: [3] }), { a: [3] }, 'arrays are replaced');
  t.same(mergePatch({ a: 1 }, 'x'), 'x');
});

void t.test('a patch merges into the spec; steps merge by index and plugin', async (t) => {
  const next = applyPipelinePatch(base, { name: 'New', processing: [{ target: -16 }, {}] }, REST_BODY);
  t.equal(next.name, 'New');
  t.same(next.processing[0], { plugin: 'loudness-normalize', target: -16, true_peak: -2 }, 'true_peak kept');
  t.same(next.processing[1], base.processing[1], '{} keeps a step');
  t.equal(next.input.passphrase, 'correct horse battery', 'the stored passphrase is kept');
  t.same(base.processing[0], { plugin: 'loudness-normalize', target: -23, true_peak: -2 }, 'the current spec is not changed');
  const replaced = applyPipelinePatch(base, { processing: [{ plugin: 'eq', bands: [{ freq: 50, gain: 1 }] }] }, REST_BODY);
  t.same(replaced.processing, [{ plugin: 'eq', bands: [{ freq: 50, gain: 1, q: 1 }] }], 'another plugin is a new step');
  t.same(applyPipelinePatch(base, { processing: null }, REST_BODY).processing, []);
  t.equal(applyPipelinePatch(base, { output: { port: 6000 } }, REST_BODY).output.host, '239.69.1.1', 'output merged key by key');
});

void t.test('a bad patch is a ValidationError naming the field, in the style of the edge', async (t) => {
  const cases: [unknown, string][] = [
    [{ processing: [{ target: 0 }, {}] }, 'body/processing/0/target must be <= -5'],
    [{ processing: [{}, { bands: [] }] }, 'body/processing/1/bands must NOT have fewer than 1 items'],
    [{ input: { port: 70000 } }, 'body/input/port must be <= 65535'],
    [{ input: { type: null } }, 'body/input/type is required'],
    [{ processing: [{ plugin: null }] }, 'body/processing/0/plugin cannot be removed'],
    [{ version: 3 }, 'body/version is not a known field (a change may name name, input, backup, fallback, failover, output, processing)'],
    ['x', 'body must be an object'],
  ];
  for (const [patch, message] of cases) t.throws(() => applyPipelinePatch(base, patch, REST_BODY), new ValidationError(message), message);
  t.throws(() => applyPipelinePatch(base, { processing: [{ target: 0 }] }, DOTTED), new ValidationError('processing.0.target must be <= -5'));
});

void t.test('a station patch names processing only', async (t) => {
  t.same(applyProcessingPatch(base.processing, { processing: [{}, { bands: [{ freq: 200, gain: 3 }] }] }, REST_BODY)[1], { plugin: 'eq', bands: [{ freq: 200, gain: 3, q: 1 }] });
  t.throws(() => applyProcessingPatch(base.processing, { name: 'x' }, REST_BODY), /body\/name is not a known field/);
  t.throws(() => applyProcessingPatch(base.processing, {}, REST_BODY), /body\/processing is required/);
  t.throws(() => applyProcessingPatch(base.processing, { processing: [{ target: 1 }] }, REST_BODY), /body\/processing\/0\/target must be <= -5/);
});

void t.test('the plan: parameters live, structure restarts', async (t) => {
  const live = planUpdate(base, applyPipelinePatch(base, { name: 'x', processing: [{ target: -16.25, true_peak: -1 }, { bands: [{ freq: 1000, gain: 6, q: 0.7 }, { freq: 8000, gain: -1.5 }] }] }, REST_BODY));
  t.same(live, {
    kind: 'live',
    assignments: [
      { element: 'step0', property: 'target', value: '-16.25' },
      { element: 'step0', property: 'true-peak', value: '-1' },
      { element: 'step1', property: 'bands', value: '1000:6:0.7,8000:-1.5:1' },
    ],
  });
  t.same(planUpdate(base, applyPipelinePatch(base, { name: 'only the name' }, REST_BODY)), { kind: 'live', assignments: [] });
  const restart = (patch: unknown): string[] => {
    const plan = planUpdate(base, applyPipelinePatch(base, patch, REST_BODY));
    return plan.kind === 'restart' ? plan.reasons : [];
  };
  t.same(restart({ input: { port: 9001 } }), ['input']);
  t.same(restart({ input: { passphrase: 'another long secret' } }), ['input']);
  t.same(restart({ output: { host: '127.0.0.1' } }), ['output']);
  t.same(restart({ processing: [{}] }), ['processing steps added or removed']);
  t.same(restart({ processing: [base.processing[1], base.processing[0]] }), ['processing steps reordered or replaced']);
});
