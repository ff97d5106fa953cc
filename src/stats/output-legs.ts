/**
 * The state of an output's legs (its udpsinks: `out`, and `out2` for an ST 2022-7 output), from
 * two rules: the child's lines (its sends fail) and the link of the leg's interface (it has no
 * carrier). A leg is `failed` while either says so. Pure: no clock, only the order of the events.
 *
 * What GStreamer 1.22's udpsink does when a leg's network goes (measured, docs/aes67.md): every
 * send that fails (sendmsg: "Network is unreachable" once the leg's interface is down) posts one
 * WARNING message, `Error sending UDP packets`, with the destination and the reason; the sink
 * returns OK, so the tee goes on feeding the other leg and the graph keeps running, and it sends
 * again as soon as the network is back. With `rtpbatch` that is one warning per buffer list (250
 * a second at 4 packets per send) for as long as the leg is down.
 *
 * Sends rule: failed from the first such warning of its sink; cleared once a whole interval
 * between two `pipelinestats` reports passed with output packets and without a warning of its
 * sink (every send of that interval went out). gst-launch prints the bus messages in the order
 * they were posted, so the rule reads the lines only.
 *
 * Link rule: an interface that is up but has no carrier (a cut cable, a veth whose peer is down)
 * takes the packets and drops them, sendmsg does not fail, so no warning comes. The engine's link
 * watcher (net/link-watcher.ts) reads the interface once a second: failed while it says why the
 * link cannot carry packets ("no carrier on eth1"), cleared on the first reading with the carrier back.
 */
import type { UdpSendWarningEvent } from './parse-line.js';

export type LegState = 'sending' | 'failed';

export interface LegStatus {
  state: LegState;
  /**
   * Why the leg failed: the link's cause and/or the last send failure's reason, joined by "; "
   * ("no carrier on eth1", "Error sending message: Network is unreachable"); null while sending.
   */
  error: string | null;
}

/** A leg that changed state: what the supervisor logs. */
export interface LegChange {
  sink: string;
  state: LegState;
  /** With a failed send: the destination udpsink named. */
  client?: string;
  /** With `failed`: the cause that failed it. */
  error?: string;
  /** With a link cause: the interface. */
  interface?: string;
}

interface Tracked {
  /** Sends rule: the last failed send's reason while the rule says failed, else null. */
  sendError: string | null;
  /** pipelinestats reports since the sink's last warning (2: a whole interval without one). */
  reportsSinceWarning: number;
  /** Link rule: why the leg's interface cannot carry packets, else null. */
  linkError: string | null;
}

function failed(leg: Tracked | undefined): boolean {
  return leg !== undefined && (leg.sendError !== null || leg.linkError !== null);
}

export class OutputLegs {
  private readonly legs = new Map<string, Tracked>();
  /** Output packets at the previous pipelinestats report. */
  private lastPackets: number | undefined;

  /** A new child: every leg sends until a rule says otherwise (the link rule is fed again as the child's watch begins). */
  childStarted(): void {
    this.legs.clear();
    this.lastPackets = undefined;
  }

  status(sink: string): LegStatus {
    const leg = this.legs.get(sink);
    if (leg === undefined || !failed(leg)) return { state: 'sending', error: null };
    return { state: 'failed', error: [leg.linkError, leg.sendError].filter((e) => e !== null).join('; ') };
  }

  /** A send of `sink` failed. Returns the change when the leg was sending until now. */
  onWarning(event: UdpSendWarningEvent): LegChange | undefined {
    const leg = this.tracked(event.element);
    const was = failed(leg);
    leg.reportsSinceWarning = 0;
    leg.sendError = event.reason;
    if (was) return undefined;
    return { sink: event.element, state: 'failed', client: event.client, error: event.reason };
  }

  /**
   * The link of `sink`'s interface: `cause` null (it carries) or why not. Returns the change when
   * the leg's state changed with it.
   */
  onLink(sink: string, ifname: string, cause: string | null): LegChange | undefined {
    const leg = this.tracked(sink);
    const was = failed(leg);
    leg.linkError = cause;
    const is = failed(leg);
    if (was === is) return undefined;
    return is ? { sink, state: 'failed', error: cause ?? '', interface: ifname } : { sink, state: 'sending' };
  }

  /** A pipelinestats report with the output's cumulative packet count. Returns the legs that recovered. */
  onReport(outputPackets: number | undefined): LegChange[] {
    const flowed = outputPackets !== undefined && this.lastPackets !== undefined && outputPackets > this.lastPackets;
    if (outputPackets !== undefined) this.lastPackets = outputPackets;
    const changes: LegChange[] = [];
    for (const [sink, leg] of this.legs) {
      leg.reportsSinceWarning += 1;
      if (leg.sendError === null || leg.reportsSinceWarning < 2 || !flowed) continue;
      leg.sendError = null;
      if (!failed(leg)) changes.push({ sink, state: 'sending' });
    }
    return changes;
  }

  private tracked(sink: string): Tracked {
    let leg = this.legs.get(sink);
    if (leg === undefined) {
      leg = { sendError: null, reportsSinceWarning: 0, linkError: null };
      this.legs.set(sink, leg);
    }
    return leg;
  }
}

const SEND_WARNING = /^WARNING: from element \/GstPipeline:pipeline\d+\/GstUDPSink:[\w-]+: Error sending UDP packets$/;
/** The lines gst-launch prints after it: "Additional debug info:", the source location, the reason. */
const SEND_WARNING_DETAIL = [/^Additional debug info:$/, /^\S*gstmultiudpsink\.c\(\d+\): /, /^client \S+, reason: /];

/**
 * gst-launch prints every udpsink send warning as four lines of text besides its bus message. A
 * failed leg makes 250 of them a second: they would push everything else out of the pipeline's
 * log ring. The bus message is parsed (OutputLegs); these lines are dropped.
 */
export class SendWarningLines {
  private expect = 0;

  /** True when `line` belongs to a udpsink send warning's text (and is not kept). */
  swallow(line: string): boolean {
    if (SEND_WARNING.test(line)) {
      this.expect = SEND_WARNING_DETAIL.length;
      return true;
    }
    if (this.expect > 0) {
      const pattern = SEND_WARNING_DETAIL[SEND_WARNING_DETAIL.length - this.expect];
      if (pattern?.test(line) === true) {
        this.expect -= 1;
        return true;
      }
      this.expect = 0;
    }
    return false;
  }
}
