/**
 * What a pipeline tile carries of failover (live-feed.ts failoverView): the input on air, the
 * selection and the inputs the pipeline has, read from the view as GET returns it. A pipeline
 * without backup and fallback, and a view without the fields, carry none (the page then shows
 * no failover controls). The views are shaped as docs/api.md and FAILOVER-INTERFACE.md write them.
 */
import t from 'tap';
import { failoverView } from '../../src/dashboard/live-feed.js';

const input = { type: 'srt', port: 9000, latency: 120 };
const base = { id: 'pl_a', name: 'A', state: 'running', input, processing: [], output: { type: 'rtp', host: '127.0.0.1', port: 5004 } };

void t.test('a pipeline with neither backup nor fallback carries no failover', async (t) => {
  t.equal(failoverView(base), null, 'view without the failover fields');
  t.equal(failoverView({ ...base, active_input: 'main', selection: 'auto', inputs: { main: { connected: true, level_dbfs: -14, silent_seconds: 0 } } }), null,
    'view with the fields but nothing to switch to');
});

void t.test('a pipeline with a backup: on air, selection, both inputs', async (t) => {
  const view = {
    ...base,
    backup: { ...input, port: 9001 },
    active_input: 'backup',
    selection: 'auto',
    inputs: { main: { connected: false, level_dbfs: null, silent_seconds: 4.27 }, backup: { connected: true, level_dbfs: -20.04, silent_seconds: 0 } },
  };
  t.same(failoverView(view), {
    active_input: 'backup',
    selection: 'auto',
    available: ['main', 'backup'],
    main: { connected: false, level_dbfs: null, silent_seconds: 4.3 },
    backup: { connected: true, level_dbfs: -20, silent_seconds: 0 },
  });
});

void t.test('a fallback only, forced by hand; before the first report', async (t) => {
  const view = { ...base, fallback: { type: 'file', path: 'id.flac', loop: true }, active_input: 'fallback', selection: 'fallback', inputs: { main: { connected: true, level_dbfs: -14, silent_seconds: 0 } } };
  t.same(failoverView(view)?.available, ['main', 'fallback'], 'main and the fallback, no backup');
  t.equal(failoverView(view)?.selection, 'fallback');
  t.equal(failoverView(view)?.backup, null);
  const fresh = failoverView({ ...base, backup: { ...input, port: 9001 }, fallback: { type: 'file', path: 'id.flac', loop: true }, active_input: null, selection: 'auto' });
  t.same(fresh, { active_input: null, selection: 'auto', available: ['main', 'backup', 'fallback'], main: null, backup: null }, 'null before the child reports');
});

void t.test('values of the wrong type are not passed on', async (t) => {
  const view = { ...base, backup: { ...input, port: 9001 }, active_input: 'studio', selection: 42, inputs: { main: { connected: 'yes' }, backup: { connected: true, level_dbfs: Number.NaN, silent_seconds: Number.POSITIVE_INFINITY } } };
  t.same(failoverView(view), { active_input: null, selection: 'auto', available: ['main', 'backup'], main: null, backup: { connected: true, level_dbfs: null, silent_seconds: 0 } });
});
