import t from 'tap';
import { framecount, payloadBytes } from '../../src/spec/rtp-format.js';

void t.test('packet sizes', async (t) => {
  t.equal(framecount(1), 48);
  t.equal(framecount(0.333), 16);
  t.equal(payloadBytes('L24', 2, 1), 288);
  t.equal(payloadBytes('L24', 8, 4), 4608);
  t.equal(payloadBytes('L16', 8, 0.125), 96);
});
