/**
 * Whether a network interface can carry packets, from what Linux shows in sysfs: a leg whose
 * interface is up but has no carrier (a cut cable, the switch port gone, a veth whose peer is
 * down) sends into nothing, and `sendmsg` does not fail (docs/aes67.md, "A failed leg").
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isInterfaceName } from './interface-name.js';

/** One reading of an interface's link. */
export interface LinkReading {
  /** The interface exists (`/sys/class/net/<if>` is there). */
  exists: boolean;
  /** `operstate` (RFC 2863: up, down, lowerlayerdown, dormant, unknown, ...); null if unreadable. */
  operstate: string | null;
  /** `carrier`: true (1), false (0), null when unreadable (Linux answers EINVAL while the interface is administratively down). */
  carrier: boolean | null;
}

/**
 * Why the interface cannot carry packets, or null when it can (or Linux does not say: an
 * interface without carrier reporting reads carrier 1 or nothing).
 */
export function linkDownCause(ifname: string, reading: LinkReading): string | null {
  if (!reading.exists) return `no interface ${ifname}`;
  if (reading.carrier === false) return `no carrier on ${ifname}`;
  if (reading.carrier === null && reading.operstate === 'down') return `${ifname} is down`;
  return null;
}

function readValue(file: string): string | null {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return null;
  }
}

/**
 * Reads an interface's link from sysfs (`<root>/<if>/operstate` and `carrier`): what the engine's
 * link watcher reads once a second. `root` is the network namespace's view (`ip netns exec`
 * mounts the namespace's own /sys). Refuses a name that is not an interface name (it goes into a path).
 */
export function readSysfsLink(ifname: string, root = '/sys/class/net'): LinkReading {
  if (!isInterfaceName(ifname)) throw new Error(`not an interface name: ${JSON.stringify(ifname)}`);
  const dir = path.join(root, ifname);
  const operstate = readValue(path.join(dir, 'operstate'));
  const carrier = readValue(path.join(dir, 'carrier'));
  // operstate is always readable while the interface exists; both unreadable: it is gone
  if (operstate === null && carrier === null) return { exists: false, operstate: null, carrier: null };
  return { exists: true, operstate, carrier: carrier === null ? null : carrier === '1' };
}
