#!/usr/bin/python3
"""The NMOS DNS-SD test's mDNS peer (python3-zeroconf, a second mDNS implementation beside the
engine's bonjour-service). Runs inside a network namespace the test made; bound to one address.

  mdns-peer.py advertise ADDRESS NAME PORT KEY=VALUE...   # _nmos-register._tcp at ADDRESS:PORT
  mdns-peer.py browse ADDRESS SECONDS                      # _nmos-node._tcp, one JSON line per event

advertise prints "ready" once the service is registered and withdraws it (mDNS goodbye) on
SIGTERM. browse prints {"event", "name", "addresses", "port", "txt"} for each add, update and
removal, and again 1.5 s after each (a TXT record replaced by a goodbye stays cached for 1 s).
Both end by themselves: advertise after 600 s, browse after SECONDS.
"""
import json
import signal
import socket
import sys
import threading
import time

from zeroconf import IPVersion, ServiceBrowser, ServiceInfo, ServiceStateChange, Zeroconf

REGISTER = "_nmos-register._tcp.local."
NODE = "_nmos-node._tcp.local."


def advertise(address: str, name: str, port: int, pairs: list) -> None:
    txt = dict(pair.split("=", 1) for pair in pairs)
    zc = Zeroconf(interfaces=[address], ip_version=IPVersion.V4Only)
    info = ServiceInfo(
        REGISTER,
        f"{name}.{REGISTER}",
        addresses=[socket.inet_aton(address)],
        port=port,
        properties=txt,
        server=f"{name}.local.",
    )
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    zc.register_service(info)
    print("ready", flush=True)
    done.wait(600)
    zc.unregister_service(info)
    zc.close()


def browse(address: str, seconds: float) -> None:
    zc = Zeroconf(interfaces=[address], ip_version=IPVersion.V4Only)
    lock = threading.Lock()

    def report(event: str, name: str) -> None:
        info = None if event == "removed" else zc.get_service_info(NODE, name, timeout=3000)
        line = {"event": event, "name": name}
        if info is not None:
            line["addresses"] = info.parsed_addresses()
            line["port"] = info.port
            line["txt"] = {k.decode(): (v.decode() if v is not None else None) for k, v in info.properties.items()}
        with lock:
            print(json.dumps(line), flush=True)

    def on_change(zeroconf, service_type, name, state_change):  # noqa: ARG001 (zeroconf's handler signature)
        event = {ServiceStateChange.Added: "added", ServiceStateChange.Updated: "updated", ServiceStateChange.Removed: "removed"}[state_change]
        threading.Thread(target=report, args=(event, name), daemon=True).start()
        if event != "removed":
            threading.Timer(1.5, report, args=("settled", name)).start()

    ServiceBrowser(zc, NODE, handlers=[on_change])
    print("ready", flush=True)
    time.sleep(seconds)
    zc.close()


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "advertise":
        advertise(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:])
    elif mode == "browse":
        browse(sys.argv[2], float(sys.argv[3]))
    else:
        sys.exit(f"unknown mode {mode}")
