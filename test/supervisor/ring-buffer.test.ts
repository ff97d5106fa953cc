import t from 'tap';
import { RingBuffer } from '../../src/supervisor/ring-buffer.js';

void t.test('keeps the last lines in order in constant space', async (t) => {
  const ring = new RingBuffer<number>(3);
  t.same(ring.last(), []);
  [1, 2, 3, 4, 5].forEach((n) => ring.push(n));
  t.same(ring.last(), [3, 4, 5]);
  t.same(ring.last(2), [4, 5]);
  t.same(ring.last(10), [3, 4, 5]);
  t.equal(ring.size, 3);
  ring.clear();
  t.same(ring.last(), []);
});
