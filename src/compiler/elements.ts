/**
 * The allow-list: every GStreamer element the compiler may write, with the type of each
 * property it may set. A value is turned into text only through `formatValue`, which checks it
 * against its type again (defence in depth: the spec validator has already checked it), so no
 * character that the gst-launch parser treats specially (space, tab, newline, quote, `!`, `,`
 * outside a quoted list, `=`) can reach the pipeline description.
 */
import { CLOCK_SOURCE } from '../config/schema.js';
import { isInterfaceName } from '../net/interface-name.js';
import { isDnsName, isIpLiteral } from '../spec/host.js';

export type PropertyType =
  | { kind: 'int'; min: number; max: number }
  | { kind: 'number'; min: number; max: number; decimals: number }
  | { kind: 'bool' }
  | { kind: 'enum'; values: readonly string[] }
  | { kind: 'element-name' }
  | { kind: 'ip' }
  | { kind: 'host' }
  | { kind: 'ifname' }
  | { kind: 'clock-source' }
  | { kind: 'eq-bands' }
  | { kind: 'file-path' };

const int = (min: number, max: number) => ({ kind: 'int', min, max }) as const;
const num = (min: number, max: number, decimals = 3) => ({ kind: 'number', min, max, decimals }) as const;
const bool = { kind: 'bool' } as const;
const name = { kind: 'element-name' } as const;
const I64_NS = 9007199254740991; // ns values stay within JS safe integers

export const ELEMENTS = {
  srtsrc: {
    name,
    mode: { kind: 'enum', values: ['listener'] },
    localaddress: { kind: 'ip' },
    localport: int(1, 65535),
    latency: int(20, 8000),
    'poll-timeout': int(-1, 10000),
    'keep-listening': bool,
    'wait-for-connection': bool,
    pbkeylen: { kind: 'enum', values: ['16', '24', '32'] },
  },
  // Ours (docs/elements-srtaccess.md): sets srtsrc's passphrase from a pipe the engine passes
  // (the secret is never an argv token) and reports callers libsrt refuses.
  srtaccess: { name, source: name, 'passphrase-fd': int(3, 9), 'reconnect-ms': int(50, 10_000) },
  // Ours (docs/elements-enginecontrol.md): reads property commands from the engine's control
  // socket and sets them on the named steps while playing.
  enginecontrol: { name, fd: int(4, 4) },
  // Internal input of stations with an Icecast harbor: the engine feeds the source's body to the
  // child's stdin. Never reachable from a REST/gRPC spec (the schema has no such input type).
  fdsrc: { name, fd: int(0, 0), blocksize: int(512, 65536) },
  typefind: { name },
  tsdemux: { name },
  decodebin: { name },
  // Our decodebin wrapper for the stdin input: one src pad across chained streams (gst-plugins/src/chain).
  chaindecode: { name },
  // ADTS AAC to raw frames, each passed on when complete (aacparse held one frame; gst-plugins/src/framer).
  aacframer: { name },
  audioconvert: { name },
  // Ours (gst-plugins/src/pack): F32LE to S24BE for rtpL24pay in one pass, byte for byte as
  // audioconvert, in half its instructions.
  l24pack: { name },
  audioresample: { name },
  // The clock bridge (gst-plugins, docs/elements-clockbridge.md): the jitter buffer and adaptive
  // resampler from the sender's clock to the pipeline clock, which it provides.
  clockbridge: {
    name,
    'clock-source': { kind: 'clock-source' },
    jitter: int(5_000_000, 500_000_000),
    'jitter-max': int(10_000_000, 2_500_000_000),
    chunk: int(1_000_000, 20_000_000),
    interval: int(10_000_000, I64_NS),
    // Its `level` messages, the input meter (GStreamer's level's figures).
    'meter-interval': int(10_000_000, I64_NS),
    channels: int(1, 8),
    'pace-input': bool,
    // Failover between main, the backup pad and a fallback (docs/failover.md); ns, dBFS.
    'failover-loss': int(50_000_000, 10_000_000_000),
    'failover-silence-level': num(-90, 0, 2),
    'failover-silence': int(1_000_000_000, 600_000_000_000),
    'failover-return': int(0, 600_000_000_000),
    'fallback-on-silence': bool,
    // The engine's decoded copy of the fallback file in its state dir (pipelines/fallback-cache.ts).
    'fallback-file': { kind: 'file-path' },
    select: { kind: 'enum', values: ['auto', 'main', 'backup', 'fallback'] },
  },
  pipelinestats: { name, interval: int(10_000_000, I64_NS), source: name, payloader: name, sink: name },
  loudnorm: { name, target: num(-70, -5), 'true-peak': num(-9, 0), interval: int(10_000_000, I64_NS) },
  parametriceq: { name, bands: { kind: 'eq-bands' } },
  rtpL24pay: { name, pt: int(96, 127), 'min-ptime': int(0, I64_NS), 'max-ptime': int(-1, I64_NS) },
  rtpL16pay: { name, pt: int(96, 127), 'min-ptime': int(0, I64_NS), 'max-ptime': int(-1, I64_NS) },
  rtpbatch: { name, packets: int(1, 16), 'media-clock': bool },
  tee: { name },
  valve: { name, drop: bool, 'drop-mode': { kind: 'enum', values: ['forward-sticky-events'] } },
  udpsink: {
    name,
    host: { kind: 'host' },
    port: int(1, 65535),
    'ttl-mc': int(0, 255),
    'multicast-iface': { kind: 'ifname' },
    'auto-multicast': bool,
    'qos-dscp': int(-1, 63),
    sync: bool,
    async: bool,
    'processing-deadline': int(0, I64_NS),
    'bind-port': int(0, 65535),
  },
} as const satisfies Record<string, Record<string, PropertyType>>;

export type ElementName = keyof typeof ELEMENTS;
export type PropertiesOf<E extends ElementName> = {
  [P in keyof (typeof ELEMENTS)[E]]?: (typeof ELEMENTS)[E][P] extends { kind: 'bool' }
    ? boolean
    : (typeof ELEMENTS)[E][P] extends { kind: 'int' | 'number' }
      ? number
      : (typeof ELEMENTS)[E][P] extends { kind: 'eq-bands' }
        ? readonly EqBandValue[]
        : string;
};

export interface EqBandValue {
  freq: number;
  gain: number;
  q: number;
}

/** Thrown when a value that reached the compiler does not fit its type: a bug, never user input. */
export class UnsafeValueError extends Error {
  constructor(element: string, property: string, value: unknown) {
    super(`compiler refused ${element}.${property} = ${JSON.stringify(value)}`);
    this.name = 'UnsafeValueError';
  }
}

/** Decimal text of a finite number with at most `decimals` places, never in exponent form. */
export function formatNumber(value: number, decimals: number): string {
  const fixed = value.toFixed(decimals);
  const trimmed = fixed.includes('.') ? fixed.replace(/0+$/, '').replace(/\.$/, '') : fixed;
  return trimmed === '-0' ? '0' : trimmed;
}

const ELEMENT_NAME = /^[a-z][a-z0-9_]{0,31}$/;
/** An absolute path of safe characters only (none the gst-launch parser treats specially). */
const FILE_PATH = /^\/[A-Za-z0-9_.+/-]{1,1023}$/;

export function formatValue(element: string, property: string, type: PropertyType, value: unknown): string {
  const refuse = (): never => {
    throw new UnsafeValueError(element, property, value);
  };
  switch (type.kind) {
    case 'int':
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < type.min || value > type.max) refuse();
      return String(value);
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value) || value < type.min || value > type.max) refuse();
      return formatNumber(value as number, type.decimals);
    case 'bool':
      if (typeof value !== 'boolean') refuse();
      return value ? 'true' : 'false';
    case 'enum':
      if (typeof value !== 'string' || !type.values.includes(value)) refuse();
      return value as string;
    case 'element-name':
      if (typeof value !== 'string' || !ELEMENT_NAME.test(value)) refuse();
      return value as string;
    case 'ip':
      if (typeof value !== 'string' || !isIpLiteral(value)) refuse();
      return value as string;
    case 'host':
      if (typeof value !== 'string' || (!isIpLiteral(value) && !isDnsName(value))) refuse();
      return value as string;
    case 'ifname':
      if (typeof value !== 'string' || !isInterfaceName(value)) refuse();
      return value as string;
    case 'file-path':
      if (typeof value !== 'string' || !FILE_PATH.test(value) || value.split('/').includes('..')) refuse();
      return value as string;
    case 'clock-source':
      if (typeof value !== 'string' || !CLOCK_SOURCE.test(value)) refuse();
      return value as string;
    case 'eq-bands': {
      if (!Array.isArray(value) || value.length < 1 || value.length > 16) refuse();
      const bands = (value as unknown[]).map((band) => {
        const b = band as Partial<EqBandValue>;
        const ok =
          typeof b.freq === 'number' && Number.isFinite(b.freq) && b.freq >= 20 && b.freq <= 20000 &&
          typeof b.gain === 'number' && Number.isFinite(b.gain) && b.gain >= -24 && b.gain <= 24 &&
          typeof b.q === 'number' && Number.isFinite(b.q) && b.q >= 0.1 && b.q <= 30;
        if (!ok) refuse();
        return `${formatNumber(b.freq as number, 2)}:${formatNumber(b.gain as number, 2)}:${formatNumber(b.q as number, 3)}`;
      });
      // Only digits, '.', '-', ':' and ',' inside the quotes.
      return `"${bands.join(',')}"`;
    }
  }
}

/** Argv tokens of one element: its factory name, then one `property=value` token each. */
export function element<E extends ElementName>(factory: E, properties: PropertiesOf<E> = {}): string[] {
  const types = ELEMENTS[factory] as Record<string, PropertyType>;
  const tokens: string[] = [factory];
  for (const [property, value] of Object.entries(properties)) {
    if (value === undefined) continue;
    const type = types[property];
    if (type === undefined) throw new UnsafeValueError(factory, property, value);
    tokens.push(`${property}=${formatValue(factory, property, type, value)}`);
  }
  return tokens;
}

/**
 * The processing format: F32 48 kHz with the output's channel count (1-8, checked again here).
 * audioconvert before it maps the input's channels by GStreamer's default matrix (docs/aes67.md).
 */
export function processingCaps(channels: number): string {
  if (!Number.isSafeInteger(channels) || channels < 1 || channels > 8) throw new UnsafeValueError('capsfilter', 'channels', channels);
  return `audio/x-raw,format=F32LE,layout=interleaved,rate=48000,channels=${channels}`;
}

/** Caps filters the compiler may write: fixed strings, no user values. */
export const CAPS = {
  /**
   * Every audio format tsdemux (1.22) can put out: its audio pad template plus SMPTE 302M, which
   * comes out of a private pad. The filter makes gst-launch link the first audio stream of the
   * transport stream and leave video and data unlinked (never decoded).
   */
  audioInTransportStream:
    'audio/mpeg;audio/x-lpcm;audio/x-private-ts-lpcm;audio/x-smpte-302m;audio/x-ac3;audio/x-eac3;audio/x-ac4;audio/x-dts;audio/x-opus',
} as const;
