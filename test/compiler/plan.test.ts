/**
 * The compiler's plan (compilePlan): what the supervisor and the statistics get of a spec comes
 * from the spec itself, and agrees with the argv the child runs: the loudness steps it names, an
 * SRT input, a backup input, the secrets and the watched legs.
 */
import t from 'tap';
import { compilePipeline, compilePlan, compileSecrets, legInterfacesOf, type CompilableSpec } from '../../src/compiler/compile.js';
import { parsePipelineSpec } from '../../src/spec/validate.js';
import { EXAMPLE } from '../fixtures/example.js';

const OPTIONS = { statsIntervalMs: 1000, packetsPerSend: 4, clockSource: 'tai', jitterMs: 20 };

/** The element names of one factory in an argv (`factory name=<n> ...`). */
function namesOf(argv: readonly string[], factory: string): string[] {
  return argv.flatMap((token, i) => (token === factory && argv[i + 1]?.startsWith('name=') === true ? [argv[i + 1]?.slice('name='.length) ?? ''] : []));
}

const loudness = { plugin: 'loudness-normalize', target: -23 };
const eq = { plugin: 'eq', bands: [{ freq: 100, gain: -2 }] };
const specs: [string, CompilableSpec][] = [
  ['the interface example', parsePipelineSpec(EXAMPLE)],
  ['no steps', parsePipelineSpec({ ...EXAMPLE, processing: [] })],
  ['loudness after an EQ, twice', parsePipelineSpec({ ...EXAMPLE, processing: [eq, loudness, eq, loudness] })],
  ['a backup input with passphrases', parsePipelineSpec({ ...EXAMPLE, input: { ...EXAMPLE.input, passphrase: 'main secret 123' }, backup: { type: 'srt', port: 9001, passphrase: 'backup secret 456' } })],
  ['an ST 2022-7 output from named interfaces', parsePipelineSpec({ ...EXAMPLE, output: { ...EXAMPLE.output, interface: 'eth1', redundant: { host: '239.69.2.1', interface: 'eth2' } } })],
  ['a station (stdin input)', { ...parsePipelineSpec({ ...EXAMPLE, processing: [loudness] }), input: { type: 'stdin' } }],
];

for (const [name, spec] of specs) {
  void t.test(`${name}: the plan agrees with the argv`, async (t) => {
    const plan = compilePlan(spec, OPTIONS);
    t.same(plan.argv, compilePipeline(spec, OPTIONS), 'the argv is the compiler\'s');
    t.same(plan.statsLayout.loudnessSteps, namesOf(plan.argv, 'loudnorm'), `loudness steps ${plan.statsLayout.loudnessSteps.join(', ') || 'none'}`);
    t.equal(plan.statsLayout.srtInput, plan.argv.includes('srtsrc'), 'an SRT input exactly when srtsrc runs');
    t.equal(plan.statsLayout.backupInput, namesOf(plan.argv, 'srtsrc').includes('src2'), 'a backup input exactly when src2 runs');
    t.same(plan.secrets, compileSecrets(spec), 'the secrets');
    t.same(plan.legInterfaces, legInterfacesOf(spec.output), 'the watched legs');
  });
}
