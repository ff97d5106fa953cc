/**
 * The state of an output's legs (its udpsinks: `out`, and `out2` for an ST 2022-7 output), from
 * the child's lines. Pure: no clock, only the order of the lines.
 *
 * What GStreamer 1.22's udpsink does when a leg's network goes (measured, docs/aes67.md): every
 * send that fails (sendmsg: "Network is unreachable" once the leg's interface is down) posts one
 * WARNING message, `Error sending UDP packets`, with the destination and the reason; the sink
 * returns OK, so the tee goes on feeding the other leg and the graph keeps running, and it sends
 * again as soon as the network is back. With `rtpbatch` that is one warning per buffer list (250
 * a second at 4 packets per send) for as long as the leg is down.
 *
 * So: a leg is `failed` from the first such warning of its sink; it is `sending` again once a
 * whole interval between two `pipelinestats` reports passed with output packets and without a
 * warning of its sink (every send of that interval went out). gst-launch prints the bus messages
 * in the order they were posted, so the rule reads the lines only.
 */
import type { UdpSendWarningEvent } from './parse-line.js';

export type LegState = 'sending' | 'failed';

export interface LegStatus {
  state: LegState;
  /** The last failure's reason ("Error sending message: Network is unreachable"); null while sending. */
  error: string | null;
}

/** A leg that changed state: what the supervisor logs. */
export interface LegChange {
  sink: string;
  state: LegState;
  /** With `failed`: the destination udpsink named and its reason. */
  client?: string;
  error?: string;
}

interface Tracked {
  failed: boolean;
  error: string | null;
  /** pipelinestats reports since the sink's last warning (2: a whole interval without one). */
  reportsSinceWarning: number;
}

export class OutputLegs {
  private readonly legs = new Map<string, Tracked>();
  /** Output packets at the previous pipelinestats report. */
  private lastPackets: number | undefined;

  /** A new child: every leg sends until its sink says otherwise. */
  childStarted(): void {
    this.legs.clear();
    this.lastPackets = undefined;
  }

  status(sink: string): LegStatus {
    const leg = this.legs.get(sink);
    return leg?.failed === true ? { state: 'failed', error: leg.error } : { state: 'sending', error: null };
  }

  /** A send of `sink` failed. Returns the change when the leg was sending until now. */
  onWarning(event: UdpSendWarningEvent): LegChange | undefined {
    const leg = this.legs.get(event.element) ?? { failed: false, error: null, reportsSinceWarning: 0 };
    this.legs.set(event.element, leg);
    leg.reportsSinceWarning = 0;
    leg.error = event.reason;
    if (leg.failed) return undefined;
    leg.failed = true;
    return { sink: event.element, state: 'failed', client: event.client, error: event.reason };
  }

  /** A pipelinestats report with the output's cumulative packet count. Returns the legs that recovered. */
  onReport(outputPackets: number | undefined): LegChange[] {
    const flowed = outputPackets !== undefined && this.lastPackets !== undefined && outputPackets > this.lastPackets;
    if (outputPackets !== undefined) this.lastPackets = outputPackets;
    const changes: LegChange[] = [];
    for (const [sink, leg] of this.legs) {
      leg.reportsSinceWarning += 1;
      if (!leg.failed || leg.reportsSinceWarning < 2 || !flowed) continue;
      leg.failed = false;
      leg.error = null;
      changes.push({ sink, state: 'sending' });
    }
    return changes;
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
