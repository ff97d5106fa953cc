/**
 * The compiler's gst-launch argv (src/compiler/compile.ts) as a list of elements, and the cuts the
 * benches make in it by element name (bench/cost.ts, bench/ab-cost.ts, the scale bench's floor
 * reference): a stage removed, replaced, or the chain ended after it. Cutting the compiler's own
 * argv keeps every variant what the engine runs, but for the cut.
 */
import { GST_LAUNCH_OPTIONS } from '../src/compiler/compile.js';

/** One element (or caps filter) of a gst-launch description: its tokens, and whether `!` links it to the one before. */
export interface LaunchElement {
  tokens: string[];
  linked: boolean;
}

const PROPERTY = /^[a-z][a-z0-9-]*=/i;

/** The description after GST_LAUNCH_OPTIONS, element by element (factory or caps, then its `name=value` tokens). */
export function parseLaunch(argv: readonly string[]): LaunchElement[] {
  const start = argv.indexOf('--');
  if (start < 0) throw new Error('no -- before the description');
  const elements: LaunchElement[] = [];
  let link = false;
  for (const token of argv.slice(start + 1)) {
    const last = elements.at(-1);
    if (token === '!') link = true;
    else if (PROPERTY.test(token) && last !== undefined && !link) last.tokens.push(token);
    else {
      elements.push({ tokens: [token], linked: link });
      link = false;
    }
  }
  return elements;
}

export function launchArgv(elements: readonly LaunchElement[]): string[] {
  return [...GST_LAUNCH_OPTIONS, ...elements.flatMap((e, i) => (e.linked && i > 0 ? ['!', ...e.tokens] : e.tokens))];
}

function nameOf(e: LaunchElement): string | undefined {
  return e.tokens.find((t) => t.startsWith('name='))?.slice('name='.length);
}

export function indexOf(elements: readonly LaunchElement[], name: string): number {
  const i = elements.findIndex((e) => nameOf(e) === name);
  if (i < 0) throw new Error(`the compiled graph has no element named ${name}: ${launchArgv(elements).join(' ')}`);
  return i;
}

/** The linked chain without the element `name` (its neighbours linked to each other). */
export function without(elements: readonly LaunchElement[], ...names: string[]): LaunchElement[] {
  for (const n of names) indexOf(elements, n);
  return elements.filter((e) => !names.includes(nameOf(e) ?? ''));
}

/** The element `name` replaced by `tokens` (linked as it was). */
export function replaced(elements: readonly LaunchElement[], name: string, tokens: string[]): LaunchElement[] {
  const i = indexOf(elements, name);
  return elements.map((e, j) => (j === i ? { tokens, linked: e.linked } : e));
}

/** The value the element `name` sets for `property`; an error where it sets none. */
export function propertyOf(elements: readonly LaunchElement[], name: string, property: string): string {
  const value = elements[indexOf(elements, name)]?.tokens.find((t) => t.startsWith(`${property}=`))?.slice(property.length + 1);
  if (value === undefined) throw new Error(`the compiled graph's ${name} sets no ${property}: ${launchArgv(elements).join(' ')}`);
  return value;
}

/** The element `name` without its `property=` token (the element's default then holds). */
export function withoutProperty(elements: readonly LaunchElement[], name: string, property: string): LaunchElement[] {
  propertyOf(elements, name, property); // an error where it sets none
  const i = indexOf(elements, name);
  return elements.map((x, j) => (j === i ? { tokens: x.tokens.filter((t) => !t.startsWith(`${property}=`)), linked: x.linked } : x));
}

/** The element `name` with `property=value` in place of the one the compiler wrote. */
export function withProperty(elements: readonly LaunchElement[], name: string, property: string, value: string): LaunchElement[] {
  const rest = withoutProperty(elements, name, property);
  const i = indexOf(rest, name);
  return rest.map((x, j) => (j === i ? { tokens: [...x.tokens, `${property}=${value}`], linked: x.linked } : x));
}

/** `tokens` linked into the chain right after the element `name`. */
export function insertedAfter(elements: readonly LaunchElement[], name: string, tokens: string[]): LaunchElement[] {
  const i = indexOf(elements, name);
  return [...elements.slice(0, i + 1), { tokens, linked: true }, ...elements.slice(i + 1)];
}

/**
 * The graph as the compiler wrote it before the bridge metered its own output: the bridge without
 * `meter-interval`, and GStreamer's `level` right after it at that interval (for before/after
 * figures of that change: bench/ab-cost.ts).
 */
export function withLevelElement(elements: readonly LaunchElement[]): LaunchElement[] {
  const interval = propertyOf(elements, 'bridge', 'meter-interval');
  return insertedAfter(withoutProperty(elements, 'bridge', 'meter-interval'), 'bridge', ['level', 'name=level', `interval=${interval}`, 'post-messages=true']);
}

/**
 * The linked chain cut after element `index`: what followed it in the chain is dropped and
 * `sink` linked there; the unlinked elements (pipelinestats, srtaccess, enginecontrol) stay.
 */
export function cutAfterIndex(elements: readonly LaunchElement[], index: number, sink: string[]): LaunchElement[] {
  let end = index + 1;
  while (end < elements.length && elements[end]?.linked === true) end++;
  return [...elements.slice(0, index + 1), { tokens: sink, linked: true }, ...elements.slice(end)];
}

export function cutAfter(elements: readonly LaunchElement[], name: string, sink: string[]): LaunchElement[] {
  return cutAfterIndex(elements, indexOf(elements, name), sink);
}

/**
 * What replaces a cut-away end of the chain. sync=false: the bridge's output thread paces the
 * output on the clock by itself (one chunk per 4 ms), and a fakesink on the clock would wait for
 * every packet of an RTP list (it has no render_list: 1000 waits a second where udpsink makes
 * 250), so udpsink's own wait on the clock is counted with the send.
 */
export const CUT_SINK = ['fakesink', 'name=cut', 'sync=false', 'async=false'];
