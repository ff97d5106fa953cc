/** The PTP monitor: real pmc against a socket nothing listens on, and captured answers. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import t from 'tap';
import { pmcLocalSocket, PtpMonitor } from '../../src/aes67/ptp-monitor.js';
import type { PtpStatus } from '../../src/aes67/pmc.js';

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/linuxptp-3.1.1');
const log = pino({ level: 'silent' });

void t.test('no ptp4l: the real pmc gets no answer, the status says so', async (t) => {
  const dir = t.testdir();
  const monitor = new PtpMonitor({ socket: '/tmp/no-ptp4l-at-all.sock', localSocket: pmcLocalSocket(dir, '/tmp', process.pid), domain: 0, pollMs: 60_000, log });
  await monitor.start();
  await monitor.close();
  t.equal(monitor.status.state, 'unavailable');
  t.match(monitor.status.reason, /no ptp4l answered on \/tmp\/no-ptp4l-at-all\.sock in domain 0/);
});

void t.test('answers, changes reported once, pmc missing or failing', async (t) => {
  const answers = [
    { exitCode: 0, stdout: readFileSync(path.join(fixtures, 'gm-master.txt'), 'utf8'), stderr: '' },
    { exitCode: 0, stdout: readFileSync(path.join(fixtures, 'gm-master.txt'), 'utf8'), stderr: '' },
    { exitCode: undefined, stdout: '', stderr: '' },
    { exitCode: 255, stdout: '', stderr: 'uds: bind failed\n' },
  ];
  const calls: string[][] = [];
  const changes: PtpStatus[] = [];
  const monitor = new PtpMonitor({
    socket: '/run/ptp4l',
    localSocket: '/var/lib/audio-engine/pmc.sock',
    domain: 5,
    pollMs: 500,
    log,
    run: async (command, args) => {
      calls.push([command, ...args]);
      return answers.shift() ?? { exitCode: 255, stdout: '', stderr: 'uds: bind failed\n' };
    },
  });
  monitor.onChange((status) => changes.push(status));
  await monitor.start();
  t.equal(monitor.status.state, 'locked');
  t.same(calls[0], ['pmc', '-u', '-b', '0', '-d', '5', '-s', '/run/ptp4l', '-i', '/var/lib/audio-engine/pmc.sock', 'GET PARENT_DATA_SET', 'GET TIME_STATUS_NP', 'GET PORT_DATA_SET', 'GET DEFAULT_DATA_SET']);
  while (calls.length < 4) await new Promise((resolve) => setTimeout(resolve, 50));
  await monitor.close();
  t.same(changes.map((c) => c.state), ['locked', 'unavailable'], 'the same answer twice is one change');
  t.ok(calls.length >= 4);
  t.match(monitor.status.reason, /pmc failed \(exit 255\): uds: bind failed/);
});

void t.test("pmc's own socket: in the state folder when the path fits, else in the temp folder", async (t) => {
  t.equal(pmcLocalSocket('/var/lib/audio-engine', '/tmp', 42), '/var/lib/audio-engine/pmc.sock');
  t.equal(pmcLocalSocket(`/${'x'.repeat(120)}`, '/tmp', 42), '/tmp/audio-engine-pmc.42.sock');
});
