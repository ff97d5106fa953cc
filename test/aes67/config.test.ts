/** The [aes67] section of config.toml: defaults and refusals naming the key. */
import t from 'tap';
import { checkConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/errors.js';

void t.test('defaults', async (t) => {
  t.same(checkConfig({}, 'c.toml').aes67, {
    sap: true,
    interface: '',
    sap_ttl: 16,
    sap_interval_ms: 30000,
    ptp_socket: '/var/run/ptp4l',
    ptp_domain: 0,
    ptp_poll_ms: 2000,
    ptp_traceable: false,
  });
});

void t.test('bad values stop start-up naming the key', async (t) => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ sap: 'yes' }, /aes67\.sap must be boolean/],
    [{ interface: 'eth0; rm' }, /aes67\.interface has characters that are not allowed/],
    [{ interface: 'averyveryverylongname' }, /aes67\.interface has characters that are not allowed/],
    [{ sap_ttl: 0 }, /aes67\.sap_ttl must be >= 1/],
    [{ sap_ttl: 256 }, /aes67\.sap_ttl must be <= 255/],
    [{ sap_interval_ms: 999 }, /aes67\.sap_interval_ms must be >= 1000/],
    [{ ptp_socket: 'relative/path' }, /aes67\.ptp_socket has characters that are not allowed/],
    [{ ptp_socket: `/${'x'.repeat(107)}` }, /aes67\.ptp_socket has characters that are not allowed/],
    [{ ptp_domain: 128 }, /aes67\.ptp_domain must be <= 127/],
    [{ ptp_poll_ms: 100 }, /aes67\.ptp_poll_ms must be >= 500/],
    [{ ptp_traceable: 1 }, /aes67\.ptp_traceable must be boolean/],
    [{ unknown: 1 }, /aes67\.unknown is not a known field/],
  ];
  for (const [aes67, message] of cases) {
    t.throws(() => checkConfig({ aes67 }, 'c.toml'), ConfigError, JSON.stringify(aes67));
    t.throws(() => checkConfig({ aes67 }, 'c.toml'), message, JSON.stringify(aes67));
  }
});

void t.test('a station output is held to the AES67 packet size too', async (t) => {
  const station = { id: 'a', number: 1, name: 'A', output: { type: 'rtp', host: '239.69.1.1', port: 5004, channels: 8, ptime: 4 } };
  t.throws(() => checkConfig({ stations: [station] }, 'c.toml'), /c\.toml: stations\.0\.output\.ptime 4 ms with 8 channels of L24 makes 4608-byte packets/);
});
