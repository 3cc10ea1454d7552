// Constant-rate latency probe: `connections` keep-alive sockets, each sending GETs on a
// fixed schedule (one request in flight per socket), latencies from performance.now() (µs).
//
// Three clocks per request, because Node's timers fire up to ~1–2 ms late (more on a busy
// host) and that lateness is the client's, not the server's:
//  - due:  when the schedule says the request should go;
//  - sent: when it was written (due + the client's timer lateness, or later when the
//          previous response on that socket was still outstanding);
//  - done: when its response was complete.
// `latency` counts from `sent`, except when the send was held back by the server (the
// previous response arrived after this request was due): then it counts from `due`, so a
// stall in the server is charged in full to every request it delayed (no coordinated
// omission) while the client's own timer lateness is not charged to the server.
// `fromDue` (the old figure: every request from `due`) and the timer lateness are reported
// alongside, to show how much the client itself adds.
import { connect, type Socket } from 'node:net';

export interface PacedResult {
  rate: number;
  sent: number;
  completed: number;
  /** Achieved rate (completed / seconds). */
  rps: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  /** p99 when every request is timed from when it was due (includes the client's timer lateness). */
  fromDueP99Ms: number;
  /** p99 of the client's timer lateness (a timer-driven send minus its due time). */
  timerLatenessP99Ms: number;
  /** Requests whose send the server held back (previous response later than this one's due time). */
  heldBack: number;
}

function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

const ms = (x: number) => +x.toFixed(3);

/** `bodies`: POST these (JSON, in turn) to the paths instead of GETs. */
export async function paced(opts: { port: number; paths: string[]; rate: number; seconds: number; connections: number; bodies?: string[]; contentType?: string }): Promise<PacedResult> {
  const { port, paths, rate, seconds, connections } = opts;
  const intervalMs = (1000 * connections) / rate;
  const latencies: number[] = [];
  const fromDue: number[] = [];
  const lateness: number[] = [];
  let sent = 0;
  let heldBack = 0;
  const start = performance.now() + 50;
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, (_, c) =>
      new Promise<void>((resolve, reject) => {
        const sock: Socket = connect(port, '127.0.0.1');
        sock.setNoDelay(true);
        let due = start + (intervalMs * c) / connections;
        let timedFrom = 0;
        let buf = '';
        let inFlight = false;
        let pathIdx = c;
        const write = (from: number) => {
          const i = pathIdx++;
          const p = paths[i % paths.length]!;
          timedFrom = from;
          const b = opts.bodies?.[i % opts.bodies.length];
          if (b === undefined) sock.write(`GET ${p} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
          else sock.write(`POST ${p} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${opts.contentType ?? 'application/json'}\r\nContent-Length: ${Buffer.byteLength(b)}\r\n\r\n${b}`);
          inFlight = true;
          sent++;
        };
        const onTimer = () => {
          const now = performance.now();
          if (now < due) {
            setTimeout(onTimer, due - now);
            return;
          }
          lateness.push(now - due);
          write(now);
        };
        const next = () => {
          if (due >= end) {
            sock.end();
            return;
          }
          const now = performance.now();
          if (now >= due) {
            // The previous response came after this request was due: the server held it back.
            heldBack++;
            write(due);
          } else setTimeout(onTimer, due - now);
        };
        sock.on('connect', next);
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
              const now = performance.now();
              inFlight = false;
              latencies.push(now - timedFrom);
              fromDue.push(now - due);
              due += intervalMs;
              next();
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
    rate,
    sent,
    completed: latencies.length,
    rps: Math.round(latencies.length / seconds),
    p50Ms: ms(percentile(sorted, 0.5)),
    p99Ms: ms(percentile(sorted, 0.99)),
    p999Ms: ms(percentile(sorted, 0.999)),
    maxMs: ms(sorted[sorted.length - 1] ?? NaN),
    fromDueP99Ms: ms(percentile(Float64Array.from(fromDue).sort(), 0.99)),
    timerLatenessP99Ms: ms(percentile(Float64Array.from(lateness).sort(), 0.99)),
    heldBack,
  };
}
