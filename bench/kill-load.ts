// The lookup load bench/kill.ts and bench/kill-fleet.ts kill a server under: `connections`
// keep-alive connections, each sending its next lookup as soon as the last is answered;
// the client's time of every 200 (what a report may at most show).
import { connect, type Socket } from 'node:net';

const UA = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36');

export interface KillLoad {
  /** Epoch ms of every 200 received. */
  answered: number[];
  stop(): void;
}

/** Lookups on `port` for partner/key until stopped; `node` names the lookups' node (`n<c>` when absent). */
export function killLoad(port: number, creds: { partner: string; key: string }, connections: number, node?: string): KillLoad {
  const answered: number[] = [];
  let stopped = false;
  const socks: Socket[] = [];
  for (let c = 0; c < connections; c++) {
    const sock = connect(port, '127.0.0.1');
    socks.push(sock);
    let i = 0;
    let buf = '';
    const send = () => {
      if (stopped || sock.destroyed) return;
      const q = `p=${creds.partner}&k=${creds.key}&pub=pub-${i % 7}&node=${node ?? `n${c}`}&ip=81.2.69.${i % 250}&ua=${UA}&uid=u-${i}&sid=exchange1.example&adt=1&dvt=2`;
      i++;
      sock.write(`GET /api/v1/ivt/lookup?${q} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    };
    sock.setEncoding('latin1');
    sock.on('connect', send);
    sock.on('data', (d: string) => {
      buf += d;
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const len = Number(/content-length: *(\d+)/i.exec(buf.slice(0, end))?.[1] ?? 0);
        if (buf.length < end + 4 + len) return;
        if (buf.startsWith('HTTP/1.1 200')) answered.push(Date.now());
        buf = buf.slice(end + 4 + len);
        send();
      }
    });
    sock.on('error', () => undefined);
  }
  return {
    answered,
    stop() {
      stopped = true;
      for (const x of socks) x.destroy();
    },
  };
}
