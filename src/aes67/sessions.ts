/**
 * The AES67 sessions of the engine: the SDP of every RTP output (REST, gRPC and pipeline fields
 * read it here) and the SAP announcer of the multicast ones.
 *
 * Every `tickMs` the announcer compares what should be announced (IPv4 multicast outputs of
 * pipelines whose child is wanted: not stopping, stopped or failed) with what it announces:
 * - new: announced at once, then every sap_interval_ms jittered to 2/3-4/3 of it (RFC 2974);
 * - SDP changed (PTP locked or lost, a new grandmaster): a deletion under the old message id
 *   hash, then the new SDP under a new hash;
 * - gone (deleted, stopped): a deletion.
 * close() (engine shutdown) sends a deletion for every session before the children stop.
 * An ST 2022-7 output whose redundant leg is a multicast group on another interface is announced
 * on both networks: from aes67.interface and from the leg's interface (each SAP packet with its
 * own origin address, the same two-leg SDP and hash), so a receiver on either network finds it.
 */
import { isIPv4 } from 'node:net';
import type { Logger } from 'pino';
import type { Aes67Config } from '../config/schema.js';
import { isMulticast } from '../spec/host.js';
import type { RtpOutput } from '../spec/schema.js';
import type { SenderInterface } from './host-interface.js';
import type { PtpStatus } from './pmc.js';
import { announcement, deletion, jitteredInterval, messageIdHash } from './sap.js';
import type { SapSender } from './sap-socket.js';
import { sdpBody, SdpVersion, sessionIdOf, writeSdp, type RefClock, type SdpLeg } from './sdp.js';

/** One RTP output of a pipeline or station. */
export interface StreamSource {
  id: string;
  name: string;
  output: RtpOutput;
  /** False while the pipeline is stopping, stopped or failed: not announced. */
  live: boolean;
}

export interface Aes67SessionsDeps {
  config: Aes67Config;
  streams: () => Iterable<StreamSource>;
  ptp: () => PtpStatus;
  /** The sending interface by name ("" = the first non-loopback IPv4 one). */
  findInterface: (name: string) => SenderInterface | undefined;
  openSender: (address: string, ttl: number) => Promise<SapSender>;
  log: Logger;
  now: () => number;
  random: () => number;
  tickMs: number;
}

export interface SessionView {
  pipeline_id: string;
  name: string;
  destination: string;
  port: number;
  /** SAP message identifier hash of the current announcement. */
  message_id_hash: number;
  /** SAP origin (and SDP origin) address. */
  origin: string;
  /** An ST 2022-7 output: the address it is also announced from on its redundant leg's network; null if not. */
  redundant_origin: string | null;
  announcements: number;
  last_announced_at: string | null;
  sdp: string;
}

interface Announced {
  id: string;
  name: string;
  destination: string;
  port: number;
  sdp: string;
  hash: number;
  origin: string;
  /** Announced on the redundant leg's network too, from this address. */
  redundantOrigin: string | null;
  count: number;
  sentAt: number | undefined;
  nextAt: number;
}

export class Aes67Sessions {
  private readonly versions = new Map<string, SdpVersion>();
  private readonly announced = new Map<string, Announced>();
  private sender: { address: string; socket: SapSender } | undefined;
  /** Senders on the networks of redundant legs (by interface address), beside the main one. */
  private readonly legSenders = new Map<string, SapSender>();
  /** The last send error per redundant-leg network (logged once). */
  private readonly legErrors = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private work: Promise<void> = Promise.resolve();
  private closed = false;
  private warnedNoInterface = false;
  private lastError: string | undefined;

  /** The last address seen on each interface: a link that is down drops out of the host's list, its address stays. */
  private readonly knownInterfaces = new Map<string, SenderInterface>();

  constructor(private readonly deps: Aes67SessionsDeps) {}

  /**
   * The interface by name, or while it is not listed (its link is down: Node lists running
   * interfaces only) the last seen: an SDP and its SAP session do not change when a leg's link
   * goes down and comes back.
   */
  private findInterface(name: string): SenderInterface | undefined {
    const found = this.deps.findInterface(name);
    if (found !== undefined) this.knownInterfaces.set(name, found);
    return found ?? this.knownInterfaces.get(name);
  }

  /** The reference clock the SDPs name now. */
  refclk(iface: SenderInterface | undefined): RefClock {
    const ptp = this.deps.ptp();
    if (ptp.state === 'locked' && ptp.grandmaster_id !== null && ptp.domain !== null) {
      return { kind: 'ptp', grandmaster: ptp.grandmaster_id, domain: ptp.domain };
    }
    if (this.deps.config.ptp_traceable) return { kind: 'ptp-traceable' };
    return { kind: 'localmac', mac: iface?.mac ?? '00:00:00:00:00:00' };
  }

  /** The SDP of one output, CRLF line ends; its version grows whenever the rest changes. */
  sdp(stream: Pick<StreamSource, 'id' | 'name' | 'output'>): string {
    const { output } = stream;
    const iface = this.findInterface(output.interface ?? this.deps.config.interface);
    const described = {
      name: stream.name,
      destination: output.host,
      ttl: isMulticast(output.host) ? output.ttl : undefined,
      port: output.port,
      payloadType: output.payload_type,
      encoding: output.encoding,
      channels: output.channels,
      ptime: output.ptime,
      refclk: this.refclk(iface),
      origin: iface?.address ?? '127.0.0.1',
      redundant: this.secondLeg(output),
    };
    const { origin } = described;
    let version = this.versions.get(stream.id);
    if (version === undefined) {
      version = new SdpVersion();
      this.versions.set(stream.id, version);
    }
    const v = version.of([origin, ...sdpBody(described)].join('\n'), this.deps.now());
    return writeSdp({ ...described, sessionId: sessionIdOf(stream.id), version: v });
  }

  /** An ST 2022-7 output's second leg as its SDP media section describes it. */
  private secondLeg(output: RtpOutput): SdpLeg | undefined {
    const leg = output.redundant;
    if (leg === undefined) return undefined;
    const iface = this.findInterface(leg.interface ?? this.deps.config.interface);
    return {
      destination: leg.host,
      ttl: isMulticast(leg.host) ? output.ttl : undefined,
      port: leg.port ?? output.port,
      origin: iface?.address ?? '127.0.0.1',
      refclk: this.refclk(iface),
    };
  }

  list(): SessionView[] {
    return [...this.announced.values()].map((a) => ({
      pipeline_id: a.id,
      name: a.name,
      destination: a.destination,
      port: a.port,
      message_id_hash: a.hash,
      origin: a.origin,
      redundant_origin: a.redundantOrigin,
      announcements: a.count,
      last_announced_at: a.sentAt === undefined ? null : new Date(a.sentAt).toISOString(),
      sdp: a.sdp,
    }));
  }

  start(): void {
    if (!this.deps.config.sap) return;
    const tick = (): void => {
      if (this.closed) return;
      this.work = this.work.catch(() => undefined).then(() => this.reconcile()).then(
        () => {
          this.lastError = undefined;
        },
        (error: unknown) => {
          // Logged once per distinct failure, not every tick while the network is down.
          const message = (error as Error).message;
          if (message !== this.lastError) this.deps.log.warn({ event: 'sap-failed', err: error }, `SAP announcement failed: ${message}`);
          this.lastError = message;
        },
      );
      this.timer = setTimeout(tick, this.deps.tickMs);
      this.timer.unref();
    };
    tick();
  }

  /** Runs one comparison now (after any in flight); used by tests and after a PTP change. */
  refresh(): Promise<void> {
    if (!this.deps.config.sap || this.closed) return this.work;
    // A failure of an earlier run was reported by its own caller; this run starts afresh.
    this.work = this.work.catch(() => undefined).then(() => this.reconcile());
    return this.work;
  }

  /** Deletion packets for every announced session, then the socket closes. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.work.catch(() => undefined);
    for (const session of [...this.announced.values()]) await this.withdraw(session).catch(() => undefined);
    await this.sender?.socket.close();
    this.sender = undefined;
    for (const socket of this.legSenders.values()) await socket.close();
    this.legSenders.clear();
  }

  /**
   * The address an output is also announced from: its redundant leg's interface, when the leg is
   * an IPv4 multicast group on an interface with an IPv4 address other than the main sender's.
   */
  private redundantOrigin(output: RtpOutput, main: string): string | null {
    const leg = output.redundant;
    if (leg?.interface === undefined || !isIPv4(leg.host) || !isMulticast(leg.host)) return null;
    const address = this.findInterface(leg.interface)?.address;
    return address === undefined || address === main ? null : address;
  }

  private async legSender(address: string): Promise<SapSender> {
    let socket = this.legSenders.get(address);
    if (socket === undefined) {
      socket = await this.deps.openSender(address, this.deps.config.sap_ttl);
      this.legSenders.set(address, socket);
      this.deps.log.info({ event: 'sap-sender', address, ttl: this.deps.config.sap_ttl }, `SAP announcements of redundant legs from ${address}`);
    }
    return socket;
  }

  /**
   * Sends on a redundant leg's network. A failure there (its link is down: ENETUNREACH) is logged
   * once per distinct error and does not hold up the announcements on the main network.
   */
  private async sendOnLeg(address: string, packet: Buffer): Promise<void> {
    try {
      await (await this.legSender(address)).send(packet);
      this.legErrors.delete(address);
    } catch (error) {
      const message = (error as Error).message;
      if (this.legErrors.get(address) !== message) {
        this.deps.log.warn({ event: 'sap-failed', address, err: error }, `SAP announcement on the redundant leg's network (${address}) failed: ${message}`);
      }
      this.legErrors.set(address, message);
    }
  }

  /** Closes the senders of redundant-leg networks no session uses any more. */
  private async closeUnusedLegSenders(): Promise<void> {
    const used = new Set([...this.announced.values()].map((a) => a.redundantOrigin));
    for (const [address, socket] of [...this.legSenders]) {
      if (used.has(address)) continue;
      this.legSenders.delete(address);
      await socket.close();
    }
  }

  private async socket(): Promise<{ address: string; socket: SapSender } | undefined> {
    const iface = this.findInterface(this.deps.config.interface);
    if (iface === undefined) {
      if (!this.warnedNoInterface) {
        this.warnedNoInterface = true;
        this.deps.log.warn({ event: 'sap-no-interface', interface: this.deps.config.interface }, `SAP waits: no IPv4 address on ${this.deps.config.interface || 'any interface but loopback'}`);
      }
      return undefined;
    }
    if (this.sender !== undefined && this.sender.address === iface.address) return this.sender;
    await this.sender?.socket.close();
    this.sender = { address: iface.address, socket: await this.deps.openSender(iface.address, this.deps.config.sap_ttl) };
    this.deps.log.info({ event: 'sap-sender', address: iface.address, interface: iface.name, ttl: this.deps.config.sap_ttl }, `SAP announcements from ${iface.address} (${iface.name})`);
    return this.sender;
  }

  private async reconcile(): Promise<void> {
    const now = this.deps.now();
    const all = [...this.deps.streams()];
    for (const id of this.versions.keys()) if (!all.some((s) => s.id === id)) this.versions.delete(id);
    const wanted = all.filter((s) => s.live && isIPv4(s.output.host) && isMulticast(s.output.host));
    for (const session of [...this.announced.values()]) {
      if (!wanted.some((s) => s.id === session.id)) await this.withdraw(session);
    }
    await this.closeUnusedLegSenders();
    if (wanted.length === 0) return;
    const sender = await this.socket();
    if (sender === undefined) return;
    for (const stream of wanted) {
      const sdp = this.sdp(stream);
      const current = this.announced.get(stream.id);
      const redundantOrigin = this.redundantOrigin(stream.output, sender.address);
      if (current !== undefined && current.sdp === sdp && current.origin === sender.address && current.redundantOrigin === redundantOrigin) {
        if (now >= current.nextAt) await this.send(current, now);
        continue;
      }
      let hash = messageIdHash(sdp);
      if (current !== undefined) {
        await this.withdraw(current);
        if (hash === current.hash) hash = (hash % 0xffff) + 1; // a changed SDP always gets another hash
      }
      const session: Announced = {
        id: stream.id,
        name: stream.name,
        destination: stream.output.host,
        port: stream.output.port,
        sdp,
        hash,
        origin: sender.address,
        redundantOrigin,
        count: 0,
        sentAt: undefined,
        nextAt: now,
      };
      this.announced.set(stream.id, session);
      await this.send(session, now);
    }
  }

  private async send(session: Announced, now: number): Promise<void> {
    session.nextAt = now + jitteredInterval(this.deps.config.sap_interval_ms, this.deps.random);
    const sender = this.sender;
    if (sender === undefined) return;
    await sender.socket.send(announcement(session.sdp, session.hash, session.origin));
    if (session.redundantOrigin !== null) await this.sendOnLeg(session.redundantOrigin, announcement(session.sdp, session.hash, session.redundantOrigin));
    session.count += 1;
    session.sentAt = now;
  }

  private async withdraw(session: Announced): Promise<void> {
    this.announced.delete(session.id);
    const sender = this.sender;
    if (sender === undefined || session.count === 0) return;
    await sender.socket.send(deletion(session.sdp, session.hash, session.origin));
    if (session.redundantOrigin !== null && this.legSenders.has(session.redundantOrigin)) {
      await this.sendOnLeg(session.redundantOrigin, deletion(session.sdp, session.hash, session.redundantOrigin));
    }
    this.deps.log.info({ event: 'sap-deleted', pipeline_id: session.id, hash: session.hash }, `SAP deletion of ${session.id}'s session`);
  }
}
