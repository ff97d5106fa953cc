import { createHash } from 'node:crypto';
import t from 'tap';
import { isValidKeySpec, KeyRing } from '../../src/auth/keys.js';

void t.test('plain keys and sha256 digests are both accepted', async (t) => {
  const digest = createHash('sha256').update('second-key').digest('hex');
  const ring = new KeyRing(['first-key', `sha256:${digest}`]);
  t.ok(ring.acceptsHeader('Bearer first-key'));
  t.ok(ring.acceptsHeader('Bearer second-key'));
  t.ok(ring.acceptsHeader('bearer second-key'), 'the scheme is case-insensitive');
  t.notOk(ring.acceptsHeader('Bearer third-key'));
  t.notOk(ring.acceptsHeader(`Bearer sha256:${digest}`), 'the digest itself is not a key');
  t.notOk(ring.acceptsHeader('Basic Zmlyc3Qta2V5'));
  t.notOk(ring.acceptsHeader(undefined));
  t.notOk(ring.acceptsHeader('Bearer '));
});

void t.test('key specs are checked', async (t) => {
  t.ok(isValidKeySpec('abc'));
  t.ok(isValidKeySpec(`sha256:${'a'.repeat(64)}`));
  t.notOk(isValidKeySpec('sha256:abc'));
  t.notOk(isValidKeySpec('with space'));
  t.notOk(isValidKeySpec(''));
});
