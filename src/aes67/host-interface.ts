/** The sending interface: its IPv4 address (SDP origin, SAP source) and MAC (ts-refclk localmac). */
import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';

export interface SenderInterface {
  name: string;
  address: string;
  mac: string;
}

/**
 * The named interface's first IPv4 address, or with `name` "" the first interface with an IPv4
 * address that is not loopback. Undefined when there is none (yet: an interface may come up later).
 */
export function findSenderInterface(name: string, interfaces: NodeJS.Dict<NetworkInterfaceInfo[]> = networkInterfaces()): SenderInterface | undefined {
  for (const [ifname, addresses] of Object.entries(interfaces)) {
    if (name !== '' && ifname !== name) continue;
    const v4 = (addresses ?? []).find((a) => a.family === 'IPv4' && (name !== '' || !a.internal));
    if (v4 !== undefined) return { name: ifname, address: v4.address, mac: v4.mac };
  }
  return undefined;
}

/**
 * findSenderInterface over the host's interface list read at most once per `maxAgeMs`: an SDP is
 * built for every output on every announcement pass and every pipeline list, the list rarely changes.
 */
export function senderInterfaceFinder(maxAgeMs: number, now: () => number = Date.now): (name: string) => SenderInterface | undefined {
  let readAt = -Infinity;
  let interfaces: NodeJS.Dict<NetworkInterfaceInfo[]> = {};
  return (name) => {
    if (now() - readAt >= maxAgeMs) {
      interfaces = networkInterfaces();
      readAt = now();
    }
    return findSenderInterface(name, interfaces);
  };
}
