/**
 * Who holds a port? The kernel's answer only: a real bind tells whether the port is free
 * (probeTcpPort here, probeUdpPort in net/udp-port.ts), and /proc tells which process holds it
 * when we may see it: the socket's inode from /proc/self/net/{udp,udp6,tcp,tcp6} (/proc/net is hidden
 * under ProcSubset=pid), then the process whose
 * /proc/<pid>/fd links to `socket:[inode]`. Under systemd's ProtectProc=invisible (or for
 * another user's process without privileges) the holder stays unknown; the port is still named.
 */
import { readdir, readFile, readlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { PortProbe } from '../net/udp-port.js';

export type Transport = 'udp' | 'tcp';

export interface PortHolder {
  pid: number;
  comm: string;
}

/** Tries a TCP listen on the port (what an Icecast harbor needs). */
export function probeTcpPort(port: number, address = '0.0.0.0'): Promise<PortProbe> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => {
      resolve(error.code === 'EADDRINUSE' ? 'in-use' : 'denied');
    });
    server.listen({ port, host: address, exclusive: true }, () => {
      server.close(() => resolve('free'));
    });
  });
}

/** Inodes of the sockets bound to local `port` in one /proc/net table. */
export function socketInodes(table: string, port: number): Set<string> {
  const inodes = new Set<string>();
  for (const line of table.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    const local = fields[1];
    const inode = fields[9];
    if (local === undefined || inode === undefined || inode === '0') continue;
    const hexPort = local.slice(local.lastIndexOf(':') + 1);
    if (Number.parseInt(hexPort, 16) === port) inodes.add(inode);
  }
  return inodes;
}

async function readOrEmpty(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return '';
  }
}

/** The process holding `port` (first found), or undefined when /proc does not tell. Bounded in time. */
export async function findPortHolder(port: number, transport: Transport, options: { proc?: string; timeoutMs?: number } = {}): Promise<PortHolder | undefined> {
  const proc = options.proc ?? '/proc';
  const search = async (): Promise<PortHolder | undefined> => {
    const tables = await Promise.all([transport, `${transport}6`].map((t) => readOrEmpty(`${proc}/self/net/${t}`)));
    const inodes = new Set(tables.flatMap((table) => [...socketInodes(table, port)]));
    if (inodes.size === 0) return undefined;
    const wanted = new Set([...inodes].map((inode) => `socket:[${inode}]`));
    let pids: string[];
    try {
      pids = (await readdir(proc)).filter((name) => /^[0-9]+$/.test(name));
    } catch {
      return undefined;
    }
    for (const pid of pids) {
      if (Number(pid) === process.pid) continue;
      let fds: string[];
      try {
        fds = await readdir(`${proc}/${pid}/fd`);
      } catch {
        continue; // gone, or not ours to see
      }
      for (const fd of fds) {
        let target: string;
        try {
          target = await readlink(`${proc}/${pid}/fd/${fd}`);
        } catch {
          continue;
        }
        if (wanted.has(target)) {
          const comm = (await readOrEmpty(`${proc}/${pid}/comm`)).trim();
          return { pid: Number(pid), comm: comm === '' ? 'unknown' : comm };
        }
      }
    }
    return undefined;
  };
  const timeoutMs = options.timeoutMs ?? 2000;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), timeoutMs);
  });
  try {
    return await Promise.race([search(), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The 409 message of the contract, with the holder when known: `port 8101 is already in use by nc (pid 42)`. */
export function portInUseMessage(port: number, holder: PortHolder | undefined): string {
  const base = `port ${port} is already in use`;
  if (holder === undefined) return base;
  // comm is at most 15 bytes from the kernel; keep it printable in a JSON message and a log line.
  const comm = holder.comm.replace(/[^\x20-\x7e]/g, '?');
  return `${base} by ${comm} (pid ${holder.pid})`;
}
