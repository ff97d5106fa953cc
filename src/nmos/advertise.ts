/** Peer-to-peer mode: the node's own `_nmos-node._tcp` mDNS advertisement while no registry takes it. */
import type { Bonjour, Service } from 'bonjour-service';

export class NodeAdvertisement {
  private service: Service | undefined;

  constructor(private readonly bonjour: Pick<Bonjour, 'publish'>, private readonly name: string, private readonly port: () => number) {}

  get advertised(): boolean {
    return this.service !== undefined;
  }

  /** On while `on` is true, withdrawn (mDNS goodbye) when false. */
  set(on: boolean): void {
    if (on && this.service === undefined) {
      this.service = this.bonjour.publish({
        name: this.name,
        type: 'nmos-node',
        protocol: 'tcp',
        port: this.port(),
        txt: { api_proto: 'http', api_ver: 'v1.3', api_auth: 'false', ver_slf: '0', ver_src: '0', ver_flw: '0', ver_dvc: '0', ver_snd: '0', ver_rcv: '0' },
        disableIPv6: true,
      });
    } else if (!on && this.service !== undefined) {
      const service = this.service;
      this.service = undefined;
      (service.stop as (cb?: () => void) => void)();
    }
  }
}
