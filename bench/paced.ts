// Constant-rate latency probe: `connections` keep-alive sockets, each sending GETs on a
// fixed schedule (one request in flight per socket). Latency is measured from the time a
// request was *due*, so a slow server cannot hide queueing (no coordinated omission).
import { connect, type Socket } from 'node:net';

export interface PacedResult {
  sent: number;
  completed: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

export async function paced(opts: { port: number; paths: string[]; rate: number; seconds: number; connections: number }): Promise<PacedResult> {
  const { port, paths, rate, seconds, connections } = opts;
  const intervalMs = (1000 * connections) / rate;
  const latencies: number[] = [];
  let sent = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, (_, c) =>
      new Promise<void>((resolve, reject) => {
        const sock: Socket = connect(port, '127.0.0.1');
        sock.setNoDelay(true);
        let due = start + (intervalMs * c) / connections;
        let buf = '';
        let inFlight = false;
        let pathIdx = c;
        const sendNext = () => {
          const now = performance.now();
          if (due >= end) {
            sock.end();
            return;
          }
          if (now < due) {
            setTimeout(sendNext, Math.max(0, due - now - 0.05));
            return;
          }
          const p = paths[pathIdx++ % paths.length]!;
          sock.write(`GET ${p} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
          inFlight = true;
          sent++;
        };
        sock.on('connect', sendNext);
        sock.on('data', (d) => {
          buf += d.toString('latin1');
          for (;;) {
            const h = buf.indexOf('\r\n\r\n');
            if (h < 0) return;
            const m = /content-length: *(\d+)/i.exec(buf.slice(0, h));
            const len = m ? Number(m[1]) : 0;
            if (buf.length < h + 4 + len) return;
            buf = buf.slice(h + 4 + len);
            if (inFlight) {
              inFlight = false;
              latencies.push(performance.now() - due);
              due += intervalMs;
              sendNext();
            }
          }
        });
        sock.on('error', reject);
        sock.on('close', () => resolve());
      }),
    ),
  );
  const sorted = Float64Array.from(latencies).sort();
  return {
    sent,
    completed: latencies.length,
    p50Ms: +percentile(sorted, 0.5).toFixed(3),
    p99Ms: +percentile(sorted, 0.99).toFixed(3),
    maxMs: +(sorted[sorted.length - 1] ?? NaN).toFixed(3),
  };
}
