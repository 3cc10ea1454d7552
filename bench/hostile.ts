// Hostile clients against a running ivtd (the binary, else this checkout: bench/hostile-server.ts).
// Phases (each prints one JSON line; `--phases slow,idle,unread,emfile` chooses):
//   slow    `--slow` (200) connections per port trickling their headers at a byte a second,
//           and as many trickling a body, while a well-behaved client is served on every port;
//           then how long the server takes to cut each slow one off (up to `--slow-wait` s).
//   idle    `--idle` (3000) connections open on the pre-bid port, sending nothing, while
//           lookups are made: their latency, and whether the idle ones were closed, and when.
//   unread  4 clients pipelining lookups into their sockets and never reading an answer (one
//           the server cuts off reconnects at once), for `--unread-seconds` (20): the
//           server's RSS before, each second, at its peak and after; how often it cut one off.
//   emfile  a server started with a limit of `--fd-limit` (256) open files, sent more
//           connections than that: whether it lived, what it logged (EMFILE, how often), and
//           whether lookups are answered again once the connections are gone.
//   node --import tsx bench/hostile.ts [--phases …] [--slow 200] [--slow-wait 75] [--idle 3000]
//        [--unread-seconds 20] [--fd-limit 256] [--ivtd PATH | --checkout DIR]
import { connect, type Socket } from 'node:net';
import { readFileSync, rmSync } from 'node:fs';
import { numArg, rssMb, sleep, stopProcess, strArg } from './processes.ts';
import { chooseTarget, startServer, type Server } from './hostile-server.ts';

const PHASES = strArg('phases', 'slow,idle,unread,emfile').split(',');
const SLOW = numArg('slow', 200);
const SLOW_WAIT = numArg('slow-wait', 75);
const IDLE = numArg('idle', 3000);
const UNREAD_SECONDS = numArg('unread-seconds', 20);
const FD_LIMIT = numArg('fd-limit', 256);

const UA = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36');
const lookupPath = (s: Server, i: number) =>
  `/api/v1/ivt/lookup?p=${s.creds.partner}&k=${s.creds.key}&pub=pub-1&node=n1&ip=81.2.69.${i % 250}&ua=${UA}&uid=u-${i}&sid=exchange1.example&adt=1&dvt=2`;

/** One request on a new connection; its status and milliseconds (status 0: no answer within `ms`). */
function once(port: number, request: string, ms = 10_000): Promise<{ status: number; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1', () => sock.write(request));
    let text = '';
    const done = (status: number) => {
      clearTimeout(timer);
      sock.destroy();
      resolve({ status, ms: Math.round(performance.now() - t0) });
    };
    const timer = setTimeout(() => done(0), ms);
    sock.setEncoding('latin1');
    sock.on('data', (d: string) => {
      text += d;
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (m && text.includes('\r\n\r\n')) done(Number(m[1]));
    });
    sock.on('error', () => done(0));
    sock.on('close', () => done(0));
  });
}

const get = (path: string, headers: string[] = []) => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n`;

/** Well-behaved requests to every port, one after another for `seconds`: statuses and the slowest answer per port. */
async function wellBehaved(s: Server, seconds: number): Promise<Record<string, { answered: number; failed: number; max_ms: number; median_ms: number }>> {
  const basic = Buffer.from(`${s.creds.customer}:${s.creds.reporting}`).toString('base64');
  const calls: Array<[string, number, () => string]> = [
    ['prebid lookup', s.ports.prebid, () => get(lookupPath(s, Math.floor(Math.random() * 1e6)))],
    ['prebid health-check', s.ports.prebid, () => get('/health-check')],
    ['api dashboard-config', s.ports.api, () => get('/dashboard-config.json')],
    ['report', s.ports.reporting, () => get('/v1/report?start_date=2026-01-01&end_date=2026-01-02', [`Authorization: Basic ${basic}`])],
  ];
  const out: Record<string, { ms: number[]; failed: number }> = {};
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    for (const [name, port, req] of calls) {
      const r = await once(port, req());
      const o = (out[name] ??= { ms: [], failed: 0 });
      if (r.status === 0 || r.status >= 500) o.failed++;
      else o.ms.push(r.ms);
    }
    await sleep(200);
  }
  return Object.fromEntries(
    Object.entries(out).map(([k, v]) => {
      const sorted = v.ms.sort((a, b) => a - b);
      return [k, { answered: sorted.length, failed: v.failed, max_ms: sorted.at(-1) ?? NaN, median_ms: sorted[Math.floor(sorted.length / 2)] ?? NaN }];
    }),
  );
}

interface Slow {
  kind: string;
  sock: Socket;
  opened: number;
  closedAfter: number | null;
  answered: string | null;
}

/** A connection that sends `head` at once, then one byte of `drip` a second. */
function trickle(kind: string, port: number, head: string, drip: string): Slow {
  const sock = connect(port, '127.0.0.1');
  const slow: Slow = { kind, sock, opened: Date.now(), closedAfter: null, answered: null };
  let i = 0;
  const timer = setInterval(() => {
    if (!sock.destroyed) sock.write(drip[i++ % drip.length]!);
  }, 1000);
  sock.on('connect', () => sock.write(head));
  sock.setEncoding('latin1');
  sock.on('data', (d: string) => (slow.answered ??= /^HTTP\/1\.1 \d{3}/.exec(d)?.[0] ?? d.slice(0, 20)));
  sock.on('error', () => undefined);
  sock.on('close', () => {
    clearInterval(timer);
    slow.closedAfter = (Date.now() - slow.opened) / 1000;
  });
  return slow;
}

function closeTimes(slows: Slow[]): Record<string, unknown> {
  const kinds = [...new Set(slows.map((x) => x.kind))];
  return Object.fromEntries(
    kinds.map((k) => {
      const of = slows.filter((x) => x.kind === k);
      const t = of.filter((x) => x.closedAfter !== null).map((x) => x.closedAfter!).sort((a, b) => a - b);
      const answers = [...new Set(of.map((x) => x.answered).filter((a) => a !== null))];
      return [k, { connections: of.length, cut_off: t.length, still_open: of.length - t.length, first_s: t[0] ?? null, median_s: t[Math.floor(t.length / 2)] ?? null, last_s: t.at(-1) ?? null, answers }];
    }),
  );
}

async function slowPhase(s: Server): Promise<void> {
  const slows: Slow[] = [];
  const ports: Array<[string, number, string, string]> = [
    ['prebid', s.ports.prebid, `POST /api/v1/ivt/ortb?p=${s.creds.partner}&k=${s.creds.key} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n`, '{"id":"x",   '],
    ['api', s.ports.api, 'POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 5000\r\n\r\n', 'username=a&'],
    ['report', s.ports.reporting, 'POST /v1/report HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000\r\n\r\n', 'aaaaaaaaa'],
  ];
  for (const [name, port, bodyHead, bodyDrip] of ports) {
    for (let i = 0; i < SLOW; i++) {
      slows.push(trickle(`${name} headers`, port, `GET /health-check HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: `, 'abcdefghij'));
      slows.push(trickle(`${name} body`, port, bodyHead, bodyDrip));
    }
  }
  await sleep(2000);
  const served = await wellBehaved(s, 15);
  const t0 = Date.now();
  while (Date.now() - t0 < SLOW_WAIT * 1000 && slows.some((x) => x.closedAfter === null)) await sleep(500);
  const cut = closeTimes(slows);
  for (const x of slows) x.sock.destroy();
  console.log(JSON.stringify({ phase: 'slow', slow_connections: slows.length, served_meanwhile: served, cut_off: cut, waited_s: SLOW_WAIT }, null, 1));
}

async function idlePhase(s: Server): Promise<void> {
  const idle: Slow[] = [];
  for (let i = 0; i < IDLE; i++) {
    const sock = connect(s.ports.prebid, '127.0.0.1');
    const x: Slow = { kind: 'idle', sock, opened: Date.now(), closedAfter: null, answered: null };
    sock.on('error', () => undefined);
    sock.on('close', () => (x.closedAfter = (Date.now() - x.opened) / 1000));
    sock.on('data', (d) => (x.answered ??= d.toString('latin1').slice(0, 20)));
    idle.push(x);
    if (i % 200 === 199) await sleep(20);
  }
  await sleep(1000);
  const open = idle.filter((x) => x.closedAfter === null).length;
  const served = await wellBehaved(s, 6);
  await sleep(8000);
  const cut = closeTimes(idle);
  for (const x of idle) x.sock.destroy();
  console.log(JSON.stringify({ phase: 'idle', idle_connections: IDLE, open_when_lookups_began: open, served_meanwhile: served, cut_off: cut }, null, 1));
}

async function unreadPhase(s: Server): Promise<void> {
  const before = rssMb(s.pid);
  let peak = before;
  let written = 0;
  const socks: Socket[] = [];
  let cut = 0;
  let stopping = false;
  // Four such clients at all times: one the server cuts off is replaced at once, as an
  // attacker would reconnect.
  const open = () => {
    const sock = connect(s.ports.prebid, '127.0.0.1');
    sock.on('error', () => undefined);
    sock.on('close', () => {
      if (stopping) return;
      cut++;
      open();
    });
    sock.pause(); // never read
    socks.push(sock);
    let i = 0;
    const pump = () => {
      // Write until the socket's own buffer is full, then wait for it to drain (it does only as
      // far as the server reads): the server decides how much it takes in.
      while (!sock.destroyed) {
        const batch = Array.from({ length: 50 }, () => get(lookupPath(s, i++))).join('');
        written += 50;
        if (!sock.write(batch)) return void sock.once('drain', pump);
      }
    };
    sock.on('connect', pump);
  };
  for (let c = 0; c < 4; c++) open();
  const t0 = Date.now();
  const series: number[] = [];
  while (Date.now() - t0 < UNREAD_SECONDS * 1000) {
    await sleep(1000);
    const r = rssMb(s.pid);
    series.push(r);
    peak = Math.max(peak, r);
  }
  const served = await wellBehaved(s, 3);
  stopping = true;
  for (const x of socks) x.destroy();
  await sleep(3000);
  console.log(JSON.stringify({ phase: 'unread', clients: 4, connections_cut_by_server: cut, requests_written: written, rss_mb: { before, peak, after_close: rssMb(s.pid), series }, served_meanwhile: served }, null, 1));
}

/** User + system CPU seconds a process has used (/proc/PID/stat). */
function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) / 100; // utime, stime in clock ticks (100 a second)
}

async function emfilePhase(): Promise<void> {
  const s = await startServer(chooseTarget(), 2, { fdLimit: FD_LIMIT });
  const socks: Socket[] = [];
  let refused = 0;
  for (const port of [s.ports.prebid, s.ports.api, s.ports.prebid]) {
    for (let i = 0; i < FD_LIMIT; i++) {
      const sock = connect(port, '127.0.0.1');
      sock.on('error', () => refused++);
      socks.push(sock);
    }
    await sleep(1500);
  }
  const during = await once(s.ports.prebid, get(lookupPath(s, 1)), 3000);
  // The server's CPU while out of files (a listener that spins on a failing accept shows here).
  const cpu0 = cpuSeconds(s.pid);
  await sleep(4000);
  const cpuWhileOut = (cpuSeconds(s.pid) - cpu0) / 4;
  for (const x of socks) x.destroy();
  await sleep(3000);
  const after = await wellBehaved(s, 4);
  const emfileLines = s.log.filter((l) => /EMFILE|too many open files/i.test(l));
  const alive = s.child.exitCode === null && s.child.signalCode === null;
  console.log(JSON.stringify({ phase: 'emfile', fd_limit: FD_LIMIT, connections_tried: socks.length, client_errors: refused, lookup_while_out_of_files: during, cpu_cores_while_out_of_files: Math.round(cpuWhileOut * 100) / 100, lived: alive, emfile_log_lines: emfileLines.length, first_line: emfileLines[0]?.slice(0, 300) ?? null, recovered_line: s.log.find((l) => /available again/.test(l))?.slice(0, 200) ?? null, served_after: after }, null, 1));
  await stopProcess(s.child);
  rmSync(s.dataDir, { recursive: true, force: true });
}

async function main(): Promise<void> {
  const target = chooseTarget();
  console.log(JSON.stringify({ bench: 'hostile', target: target.label, phases: PHASES }));
  if (PHASES.some((p) => p !== 'emfile')) {
    const s = await startServer(target, 2);
    try {
      if (PHASES.includes('slow')) await slowPhase(s);
      if (PHASES.includes('idle')) await idlePhase(s);
      if (PHASES.includes('unread')) await unreadPhase(s);
      console.log(JSON.stringify({ lived: s.child.exitCode === null && s.child.signalCode === null }));
    } finally {
      await stopProcess(s.child);
      rmSync(s.dataDir, { recursive: true, force: true });
    }
  }
  if (PHASES.includes('emfile')) await emfilePhase();
}

await main();
