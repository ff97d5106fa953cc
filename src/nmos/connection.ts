/**
 * The IS-05 v1.1 Connection API's senders: constraints, staged and active parameters and their
 * activation (immediate, or scheduled at a TAI time, absolute or relative).
 *
 * - **active** is read from the output itself at each request (the pipeline's spec: its legs'
 *   host and port, `output.enabled`, `output.redundant.enabled`), so a REST or gRPC change shows
 *   here too; `auto` never appears there (`source_port` is RTP_SOURCE_PORT, udpsink's bind-port).
 *   A destination that is a DNS name is the exception: `destination_ip` `auto`.
 * - **staged** is kept here, per sender, from the first request on (a copy of active).
 * - A staged PATCH is checked whole before anything changes (type of each value, the
 *   constraints, the number of legs, the output the activation would make: the pipeline's own
 *   validator); a refused one changes nothing (400 with `{code, error, debug}`).
 * - An activation becomes one output change (`changeOutput`, the engine's PATCH path): live where
 *   the child can (a new destination of the same kind), else a restart (`enabled` among them).
 *   It is complete once the change is stored (validated, written durably): an immediate
 *   activation answers then, and a restart of the child that the change needs goes on in the
 *   background (`settling`), so the answer does not wait for the old child to end (about 0.2 s
 *   on an idle host, 2 s on a loaded one). `active` reads the stored output, so it shows the
 *   new parameters from the answer on; the next activation of the output waits for the restart.
 *
 * `master_enable` and each leg's `rtp_enabled` map to `output.enabled` (false: no leg sends)
 * and `output.redundant.enabled`: the primary leg sends when master_enable and its rtp_enabled
 * are both true, the second when both of its are. The values last activated are remembered so
 * that active shows them as set while they agree with the output.
 */
import { isIpLiteral, isMulticast } from '../spec/host.js';
import { RTP_SOURCE_PORT } from '../spec/rtp-format.js';
import type { RtpOutput } from '../spec/schema.js';
import type { StreamSource } from '../aes67/sessions.js';
import { TAI_UTC_OFFSET_S, taiToUtcMs, taiVersion } from './ids.js';

export const ACTIVATION_MODES = ['activate_immediate', 'activate_scheduled_absolute', 'activate_scheduled_relative'] as const;
export type ActivationMode = (typeof ACTIVATION_MODES)[number];

export interface LegParams {
  source_ip: string;
  destination_ip: string;
  source_port: number | 'auto';
  destination_port: number | 'auto';
  rtp_enabled: boolean;
}

export interface Activation {
  mode: ActivationMode | null;
  requested_time: string | null;
  activation_time: string | null;
}

export interface SenderParams {
  receiver_id: string | null;
  master_enable: boolean;
  activation: Activation;
  transport_params: LegParams[];
}

/** What the Connection API answers: a status and a body (the params, or an IS-05 error). */
export interface ConnectionAnswer {
  status: number;
  body: unknown;
}

/** The output fields an activation changes (a JSON merge patch of `output`: null removes). */
export interface OutputPatch {
  host: string;
  port: number;
  enabled: false | null;
  redundant?: { host: string; port: number; enabled: false | null };
}

export interface ConnectionDeps {
  /** The sender's output by sender id (undefined: no such sender). */
  output: (senderId: string) => StreamSource | undefined;
  /** The address a leg sends from (its interface's, or the default interface's). */
  sourceIp: (output: RtpOutput, leg: 0 | 1) => string;
  /** Why the output this patch makes is refused (the pipeline's validator), or undefined. */
  checkOutput: (stream: StreamSource, patch: OutputPatch) => string | undefined;
  /**
   * Changes the output through the engine's PATCH path (durable; live or a restart). Calls
   * `onStored` once the new output is written durably (before a restart of the child); resolves
   * once the change is applied (a restarted child spawned).
   */
  changeOutput: (stream: StreamSource, patch: OutputPatch, onStored: () => void) => Promise<void>;
  now: () => number;
  log: { warn: (fields: object, message: string) => void; info: (fields: object, message: string) => void };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const TAI = /^([0-9]+):([0-9]+)$/;
const LEG_KEYS = ['source_ip', 'destination_ip', 'source_port', 'destination_port', 'rtp_enabled'] as const;
const STAGE_KEYS = ['receiver_id', 'master_enable', 'activation', 'transport_params'];
/** `auto` destination port: the RTP default (IS-05 sender_transport_params_rtp.json). */
const DEFAULT_PORT = 5004;

class BadRequest extends Error {}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function legsOf(output: RtpOutput): number {
  return output.redundant === undefined ? 1 : 2;
}

function error(status: number, message: string, debug: string | null = null): ConnectionAnswer {
  return { status, body: { code: status, error: message, debug } };
}

/** TAI `<s>:<ns>` of a UTC time in ms. */
function taiOf(utcMs: number): string {
  return taiVersion(utcMs);
}

/** A TAI `<s>:<ns>` as nanoseconds; undefined when malformed (nanoseconds >= 1e9 too). */
function taiNs(text: string): bigint | undefined {
  const match = TAI.exec(text);
  if (match === null || match[1]!.length > 15 || match[2]!.length > 9) return undefined;
  return BigInt(match[1]!) * 1_000_000_000n + BigInt(match[2]!);
}

interface SenderState {
  staged: Omit<SenderParams, 'activation'>;
  pending: { activation: Activation; timer: NodeJS.Timeout } | undefined;
  /** The last activation, as active shows it. */
  lastActivation: Activation;
  /** What the last activation set, shown in active while the output agrees with it. */
  activated: { receiver_id: string | null; master_enable: boolean; rtp_enabled: boolean[] } | undefined;
  /** Activations of this sender run one after the other. */
  applying: Promise<unknown>;
  /** The restart of the child that a stored activation still waits for (undefined: none). */
  settling: Promise<void> | undefined;
}

const NO_ACTIVATION: Activation = { mode: null, requested_time: null, activation_time: null };

export class SenderConnections {
  private readonly senders = new Map<string, SenderState>();

  constructor(private readonly deps: ConnectionDeps) {}

  /** The constraints of each leg (one entry per leg). */
  constraints(senderId: string): ConnectionAnswer {
    const stream = this.deps.output(senderId);
    if (stream === undefined) return error(404, `no sender ${senderId}`);
    const legs = Array.from({ length: legsOf(stream.output) }, (_, leg) => ({
      source_ip: { enum: [this.deps.sourceIp(stream.output, leg as 0 | 1)], description: 'the interface this leg sends from' },
      destination_ip: { description: 'an IPv4 or IPv6 address, unicast or multicast' },
      source_port: { enum: [RTP_SOURCE_PORT, 'auto'], description: 'every leg sends from this port' },
      destination_port: { minimum: 1, maximum: 65535 },
      rtp_enabled: {},
    }));
    return { status: 200, body: legs };
  }

  active(senderId: string): ConnectionAnswer {
    const stream = this.deps.output(senderId);
    if (stream === undefined) return error(404, `no sender ${senderId}`);
    const state = this.state(senderId, stream);
    return { status: 200, body: { ...this.activeParams(stream, state), activation: state.lastActivation } };
  }

  staged(senderId: string): ConnectionAnswer {
    const stream = this.deps.output(senderId);
    if (stream === undefined) return error(404, `no sender ${senderId}`);
    const state = this.state(senderId, stream);
    return { status: 200, body: this.stagedBody(state) };
  }

  /** PATCH staged: stage, and activate as the body asks. Refused whole (400) or not at all. */
  async patch(senderId: string, body: unknown): Promise<ConnectionAnswer> {
    const stream = this.deps.output(senderId);
    if (stream === undefined) return error(404, `no sender ${senderId}`);
    const state = this.state(senderId, stream);
    const run = state.applying.catch(() => undefined).then(() => this.patchNow(senderId, stream, state, body));
    state.applying = run;
    return run;
  }

  /** Pending scheduled activations end (engine shutdown). */
  close(): void {
    for (const state of this.senders.values()) {
      if (state.pending !== undefined) clearTimeout(state.pending.timer);
      state.pending = undefined;
    }
  }

  /**
   * IS-04 subscription.receiver_id: the receiver the last activation named, while the sender is
   * active (master_enable) and sends unicast (IS-04 sender.json: "Only set if it is active, uses
   * a unicast push-based transport and is sending to an NMOS Receiver"); otherwise null.
   * `output` is the sender's output (this is called while the Node API model is built).
   */
  receiverOf(senderId: string, output: RtpOutput): string | null {
    const set = this.senders.get(senderId)?.activated;
    if (set === undefined || set.receiver_id === null || !set.master_enable || output.enabled === false) return null;
    const hosts = [output.host, ...(output.redundant === undefined ? [] : [output.redundant.host])];
    return hosts.every((host) => isIpLiteral(host) && !isMulticast(host)) ? set.receiver_id : null;
  }

  /** True while a stored activation's restart of the child is under way (the sender stays active). */
  settling(senderId: string): boolean {
    return this.senders.get(senderId)?.settling !== undefined;
  }

  /** Senders that are gone lose their state. */
  keep(ids: ReadonlySet<string>): void {
    for (const [id, state] of this.senders) {
      if (ids.has(id)) continue;
      if (state.pending !== undefined) clearTimeout(state.pending.timer);
      this.senders.delete(id);
    }
  }

  private state(senderId: string, stream: StreamSource): SenderState {
    let state = this.senders.get(senderId);
    if (state === undefined || state.staged.transport_params.length !== legsOf(stream.output)) {
      if (state?.pending !== undefined) clearTimeout(state.pending.timer);
      const active = this.activeParams(stream, undefined);
      state = { staged: structuredClone(active), pending: undefined, lastActivation: { ...NO_ACTIVATION }, activated: undefined, applying: Promise.resolve(), settling: undefined };
      this.senders.set(senderId, state);
    }
    return state;
  }

  private stagedBody(state: SenderState): SenderParams {
    return { ...structuredClone(state.staged), activation: state.pending?.activation ?? { ...NO_ACTIVATION } };
  }

  /** The parameters in use, from the output (and what the last activation set, while it agrees). */
  private activeParams(stream: StreamSource, state: SenderState | undefined): Omit<SenderParams, 'activation'> {
    const { output } = stream;
    const sends = [output.enabled !== false, output.enabled !== false && output.redundant?.enabled !== false];
    const set = state?.activated;
    const agrees = set !== undefined && set.rtp_enabled.length === legsOf(output)
      && set.rtp_enabled.every((on, leg) => (set.master_enable && on) === sends[leg]);
    const master = agrees ? set.master_enable : output.enabled !== false;
    const rtp = (leg: number): boolean => (agrees ? set.rtp_enabled[leg]! : leg === 0 || output.redundant?.enabled !== false);
    const legs: LegParams[] = [{
      source_ip: this.deps.sourceIp(output, 0),
      destination_ip: isIpLiteral(output.host) ? output.host : 'auto',
      source_port: RTP_SOURCE_PORT,
      destination_port: output.port,
      rtp_enabled: rtp(0),
    }];
    if (output.redundant !== undefined) {
      legs.push({
        source_ip: this.deps.sourceIp(output, 1),
        destination_ip: isIpLiteral(output.redundant.host) ? output.redundant.host : 'auto',
        source_port: RTP_SOURCE_PORT,
        destination_port: output.redundant.port ?? output.port,
        rtp_enabled: rtp(1),
      });
    }
    return { receiver_id: agrees ? set.receiver_id : null, master_enable: master, transport_params: legs };
  }

  private async patchNow(senderId: string, stream: StreamSource, state: SenderState, body: unknown): Promise<ConnectionAnswer> {
    let next: Omit<SenderParams, 'activation'>;
    let activation: { mode: ActivationMode | null; requested: string | null } | undefined;
    try {
      ({ next, activation } = this.parse(stream, state, body));
    } catch (e) {
      if (e instanceof BadRequest) return error(400, e.message);
      throw e;
    }
    if (state.pending !== undefined && activation?.mode !== null) {
      return error(423, `sender ${senderId} is locked: an activation is scheduled for ${state.pending.activation.activation_time ?? '?'}; cancel it with activation.mode null`);
    }
    // What the activation would do is checked now, so a refused value changes nothing.
    if (activation?.mode !== null && activation !== undefined) {
      const why = this.deps.checkOutput(stream, this.outputPatch(stream, next));
      if (why !== undefined) return error(400, why);
    }
    state.staged = next;
    if (activation === undefined) return { status: 200, body: this.stagedBody(state) };
    if (activation.mode === null) {
      if (state.pending !== undefined) clearTimeout(state.pending.timer);
      state.pending = undefined;
      return { status: 200, body: this.stagedBody(state) };
    }
    const now = this.deps.now();
    if (activation.mode === 'activate_immediate') {
      try {
        await this.activate(senderId, state, { mode: 'activate_immediate', requested_time: null, activation_time: null });
      } catch (e) {
        return error(500, `the activation failed: ${(e as Error).message}`);
      }
      return { status: 200, body: { ...structuredClone(state.staged), activation: { mode: 'activate_immediate', requested_time: null, activation_time: state.lastActivation.activation_time } } };
    }
    const requestedNs = taiNs(activation.requested ?? '') ?? 0n;
    const nowNs = BigInt(Math.round(now)) * 1_000_000n + BigInt(TAI_UTC_OFFSET_S) * 1_000_000_000n;
    const atNs = activation.mode === 'activate_scheduled_absolute' ? requestedNs : nowNs + requestedNs;
    const atTai = `${atNs / 1_000_000_000n}:${atNs % 1_000_000_000n}`;
    const delayMs = Math.max(0, (taiToUtcMs(atTai) ?? now) - now);
    const scheduled: Activation = { mode: activation.mode, requested_time: activation.requested, activation_time: atTai };
    const timer = setTimeout(() => {
      if (state.pending?.timer !== timer) return;
      state.pending = undefined;
      state.applying = state.applying.catch(() => undefined).then(() => this.activate(senderId, state, scheduled)).catch((e: unknown) => {
        this.deps.log.warn({ event: 'nmos-activation-failed', sender_id: senderId }, `IS-05 scheduled activation of sender ${senderId} failed: ${(e as Error).message}`);
      });
    }, delayMs);
    timer.unref();
    state.pending = { activation: scheduled, timer };
    return { status: 202, body: this.stagedBody(state) };
  }

  /**
   * Applies the staged parameters to the output; resolves once the change is stored (active then
   * shows them), a restart of the child it needs going on in `state.settling`. Rejects when the
   * change is refused before it is stored (nothing changed).
   */
  private async activate(senderId: string, state: SenderState, activation: Activation): Promise<void> {
    const stream = this.deps.output(senderId);
    if (stream === undefined) throw new Error(`sender ${senderId} is gone`);
    const staged = structuredClone(state.staged);
    const patch = this.outputPatch(stream, staged);
    const started = this.deps.now();
    let markStored: () => void = () => undefined;
    const stored = new Promise<void>((resolve) => {
      markStored = resolve;
    });
    const applied = this.deps.changeOutput(stream, patch, () => markStored());
    await Promise.race([stored, applied]);
    const settling = applied.then(
      () => undefined,
      (e: unknown) => {
        this.deps.log.warn({ event: 'nmos-activation-failed', sender_id: senderId }, `IS-05 activation of sender ${senderId} was stored, its restart failed: ${(e as Error).message}`);
      },
    ).finally(() => {
      if (state.settling === settling) state.settling = undefined;
    });
    state.settling = settling;
    const at = taiOf(this.deps.now());
    state.activated = { receiver_id: staged.receiver_id, master_enable: staged.master_enable, rtp_enabled: staged.transport_params.map((leg) => leg.rtp_enabled) };
    state.lastActivation = { mode: activation.mode, requested_time: activation.requested_time, activation_time: activation.mode === 'activate_immediate' ? at : activation.activation_time };
    // took_ms: from the activation's start (the request, or the scheduled time) to the stored change.
    this.deps.log.info({ event: 'nmos-activated', sender_id: senderId, mode: activation.mode, output: patch, took_ms: this.deps.now() - started }, `IS-05 activation of sender ${senderId} (${activation.mode ?? 'none'})`);
  }

  /** The output change the staged parameters make (`auto`: the current destination, port 5004). */
  private outputPatch(stream: StreamSource, staged: Omit<SenderParams, 'activation'>): OutputPatch {
    const { output } = stream;
    const leg = (params: LegParams, host: string): { host: string; port: number } => ({
      host: params.destination_ip === 'auto' ? host : params.destination_ip,
      port: params.destination_port === 'auto' ? DEFAULT_PORT : params.destination_port,
    });
    const [first, second] = staged.transport_params;
    const patch: OutputPatch = { ...leg(first!, output.host), enabled: staged.master_enable && first!.rtp_enabled ? null : false };
    // The second leg is off with the output while master_enable is false, and keeps its own flag.
    if (second !== undefined && output.redundant !== undefined) patch.redundant = { ...leg(second, output.redundant.host), enabled: second.rtp_enabled ? null : false };
    return patch;
  }

  /** The staged parameters a PATCH body makes, checked value by value; throws BadRequest naming the field. */
  private parse(stream: StreamSource, state: SenderState, body: unknown): { next: Omit<SenderParams, 'activation'>; activation: { mode: ActivationMode | null; requested: string | null } | undefined } {
    if (!isObject(body)) throw new BadRequest('the body must be a JSON object (sender-stage-schema)');
    for (const key of Object.keys(body)) {
      if (!STAGE_KEYS.includes(key)) throw new BadRequest(`${key} is not a staged parameter (one of ${STAGE_KEYS.join(', ')})`);
    }
    const next = structuredClone(state.staged);
    if (body.receiver_id !== undefined) {
      if (body.receiver_id !== null && (typeof body.receiver_id !== 'string' || !UUID.test(body.receiver_id))) throw new BadRequest('receiver_id must be null or a lower-case UUID');
      next.receiver_id = body.receiver_id;
    }
    if (body.master_enable !== undefined) {
      if (typeof body.master_enable !== 'boolean') throw new BadRequest('master_enable must be a boolean');
      next.master_enable = body.master_enable;
    }
    if (body.transport_params !== undefined) {
      const legs = legsOf(stream.output);
      if (!Array.isArray(body.transport_params)) throw new BadRequest('transport_params must be an array, one object per leg');
      if (body.transport_params.length !== legs) throw new BadRequest(`transport_params must have ${legs} entr${legs === 1 ? 'y' : 'ies'} (one per leg, as /constraints), not ${body.transport_params.length}`);
      body.transport_params.forEach((item: unknown, leg) => {
        next.transport_params[leg] = this.parseLeg(stream.output, leg as 0 | 1, item, next.transport_params[leg]!);
      });
      // output.enabled switches the whole output: the primary leg cannot be off while the second sends.
      const [first, second] = next.transport_params;
      if (second !== undefined && !first!.rtp_enabled && second.rtp_enabled) {
        throw new BadRequest('transport_params[0].rtp_enabled false needs transport_params[1].rtp_enabled false too: this sender cannot switch its primary leg off alone (use master_enable)');
      }
    }
    let activation: { mode: ActivationMode | null; requested: string | null } | undefined;
    if (body.activation !== undefined) {
      const a = body.activation;
      if (!isObject(a)) throw new BadRequest('activation must be an object');
      for (const key of Object.keys(a)) if (key !== 'mode' && key !== 'requested_time') throw new BadRequest(`activation.${key} is not known (mode, requested_time)`);
      if (!('mode' in a)) throw new BadRequest('activation.mode is required');
      if (a.mode !== null && !(ACTIVATION_MODES as readonly unknown[]).includes(a.mode)) throw new BadRequest(`activation.mode must be null or one of ${ACTIVATION_MODES.join(', ')}`);
      const mode = a.mode as ActivationMode | null;
      const requested = a.requested_time ?? null;
      if (requested !== null && (typeof requested !== 'string' || taiNs(requested) === undefined)) throw new BadRequest('activation.requested_time must be null or a TAI time <seconds>:<nanoseconds>');
      if ((mode === 'activate_scheduled_absolute' || mode === 'activate_scheduled_relative') && requested === null) throw new BadRequest(`activation.requested_time is required with ${mode}`);
      activation = { mode, requested: mode === 'activate_immediate' || mode === null ? null : requested };
    }
    return { next, activation };
  }

  private parseLeg(output: RtpOutput, leg: 0 | 1, item: unknown, current: LegParams): LegParams {
    const field = (key: string): string => `transport_params[${leg}].${key}`;
    if (!isObject(item)) throw new BadRequest(`transport_params[${leg}] must be an object ({} leaves the leg as it is)`);
    for (const key of Object.keys(item)) {
      if (!(LEG_KEYS as readonly string[]).includes(key)) throw new BadRequest(`${field(key)} is not supported by this sender (see /constraints)`);
    }
    const next = { ...current };
    if (item.source_ip !== undefined) {
      const allowed = this.deps.sourceIp(output, leg);
      if (item.source_ip !== 'auto' && item.source_ip !== allowed) throw new BadRequest(`${field('source_ip')} must be auto or ${allowed} (the leg's interface; /constraints)`);
      next.source_ip = item.source_ip;
    }
    if (item.destination_ip !== undefined) {
      const ip = item.destination_ip;
      if (typeof ip !== 'string' || (ip !== 'auto' && (!isIpLiteral(ip) || ip === '0.0.0.0' || ip === '::'))) {
        throw new BadRequest(`${field('destination_ip')} must be auto or an IPv4 or IPv6 address`);
      }
      next.destination_ip = ip;
    }
    if (item.source_port !== undefined) {
      if (item.source_port !== 'auto' && item.source_port !== RTP_SOURCE_PORT) throw new BadRequest(`${field('source_port')} must be auto or ${RTP_SOURCE_PORT} (every leg sends from it; /constraints)`);
      next.source_port = item.source_port;
    }
    if (item.destination_port !== undefined) {
      const port = item.destination_port;
      if (port !== 'auto' && (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)) {
        throw new BadRequest(`${field('destination_port')} must be auto or an integer 1-65535`);
      }
      next.destination_port = port;
    }
    if (item.rtp_enabled !== undefined) {
      if (typeof item.rtp_enabled !== 'boolean') throw new BadRequest(`${field('rtp_enabled')} must be a boolean`);
      next.rtp_enabled = item.rtp_enabled;
    }
    return next;
  }
}
