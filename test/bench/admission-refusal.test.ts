import t from 'tap';
import { describeRules, refusalRule } from '../../bench/engine-admission.js';
import { CostBook, decide, type HostLoad } from '../../src/capacity/model.js';

// The admission bench tells the rules apart by the engine's own messages: made here by decide().
const load = (over: Partial<HostLoad>): HostLoad => ({
  capacityPct: 200, reservePct: 30, othersPct: 20, committedPct: 100, childrenPct: 90, measured: true, ...over,
});
const cost = new CostBook().cost({ processing: [{ plugin: 'loudness-normalize', target: -23, true_peak: -1 }] });

void t.test('the admission bench names the rule of each refusal from its message', async (t) => {
  const byCost = decide(load({ othersPct: 68 }), cost);
  const byUse = decide(load({ childrenPct: 147 }), cost);
  const byBehind = decide(load({ othersPct: 60 }), cost, ['pl_a']);
  t.notOk(byCost.admit || byUse.admit || byBehind.admit, 'each is a refusal');
  t.equal(refusalRule(`not enough CPU for a new pipeline: ${byCost.reason}`), 'cost');
  t.equal(refusalRule(`not enough CPU for a new pipeline: ${byUse.reason}`), 'used');
  t.equal(refusalRule(`not enough CPU for a new pipeline: ${byBehind.reason}`), 'behind');
  t.equal(describeRules({ cost: 2, used: 1, behind: 0 }), 'cost 2, used 1, behind 0');
});
