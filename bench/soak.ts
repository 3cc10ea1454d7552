// Soak: ivtd under steady load for `--minutes` (30), with everything an operator and a
// customer do meanwhile: lookups at half the saturation rate measured first (`--rate N` to
// give it), beacons for a share of the lookups' lids, reports from the reporting API, a reload
// (SIGHUP) every minute, a prebid key rotation every five (the new key used from then on, the
// old one in its grace) and a feedback upload (labels by lid) every minute. Each minute: RSS,
// the lookups' p99 as the client sees it, errors (5xx, unanswered, a refusal of a genuine
// request). At the end, the report's lookups against the 200s answered.
// Targets: RSS flat after the first five minutes, p99 within 1.5 × its first-five-minute value,
// 0 errors, reported lookups = answered.
//   node --import tsx bench/soak.ts [--minutes 30] [--rate N] [--connections 16] [--ivtd PATH | --checkout DIR]
//        [--minute-seconds 60] (a shorter "minute", for a smoke run only)
import { connect, type Socket } from 'node:net';
import { rmSync } from 'node:fs';
import { numArg, rssMb, sleep, stopProcess } from './processes.ts';
import { chooseTarget, startServer, type Server } from './hostile-server.ts';

const MINUTES = numArg('minutes', 30);
/** Seconds in a sampling "minute" (60): shorter only for the smoke run (test/bench/scripts.test.ts). */
const MINUTE_S = numArg('minute-seconds', 60);
const CONNECTIONS = numArg('connections', 16);
const FLUSH = 5;
const UA = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36');

interface Minute {
  lookups: number;
  beacons: number;
  errors: number;
  latencies: number[];
}
const fresh = (): Minute => ({ lookups: 0, beacons: 0, errors: 0, latencies: [] });

/**
 * Lookups (and beacons for one lid in ten) over `CONNECTIONS` keep-alive connections, each
 * paced to its share of `rate` a second (0: as fast as answered). `key()` is read per request.
 */
function drive(s: Server, rate: number, key: () => string, m: () => Minute, lids: string[]): { stop(): Promise<void>; answered200: () => number } {
  let stopped = false;
  let ok200 = 0;
  const socks: Socket[] = [];
  const perConn = rate > 0 ? rate / CONNECTIONS : 0;
  for (let c = 0; c < CONNECTIONS; c++) {
    const sock = connect(s.ports.prebid, '127.0.0.1');
    socks.push(sock);
    let i = 0;
    let buf = '';
    let sentAt = 0;
    let kind: 'lookup' | 'beacon' = 'lookup';
    const next = () => {
      if (stopped || sock.destroyed) return;
      sentAt = performance.now();
      if (lids.length > 0 && i % 10 === 5) {
        kind = 'beacon';
        sock.write(`GET /api/v1/ivt/imp?lid=${lids[i % lids.length]} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: x\r\n\r\n`);
      } else {
        kind = 'lookup';
        const q = `p=${s.creds.partner}&k=${key()}&pub=pub-${i % 13}&node=n${c}&ip=81.2.${c}.${i % 250}&ua=${UA}&uid=u-${(i * 7919) % 100000}&sid=exchange1.example&adt=1&dvt=2`;
        sock.write(`GET /api/v1/ivt/lookup?${q} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      }
      i++;
    };
    // Paced to a schedule (one request due every 1000 / perConn ms), not to the last answer:
    // a timer fires a millisecond late at best, and waiting "interval − latency" after each
    // answer ran the soak at about a third of saturation instead of half. Behind schedule, the
    // next request goes at once (at most a second's worth caught up).
    let due = 0;
    const paced = () => {
      if (perConn === 0) return next();
      const now = performance.now();
      due = Math.max(due + 1000 / perConn, now - 1000);
      if (due <= now) next();
      else setTimeout(next, due - now);
    };
    sock.setEncoding('latin1');
    sock.on('connect', () => {
      due = performance.now();
      next();
    });
    sock.on('data', (d: string) => {
      buf += d;
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.slice(0, end);
        const len = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length < end + 4 + len) return;
        const status = Number(head.slice(9, 12));
        const body = buf.slice(end + 4, end + 4 + len);
        buf = buf.slice(end + 4 + len);
        const cur = m();
        if (kind === 'lookup') {
          cur.lookups++;
          cur.latencies.push(performance.now() - sentAt);
          if (status === 200) {
            ok200++;
            if (lids.length < 5000 && i % 3 === 0) {
              const l = /"lid":"([A-Za-z0-9_-]+)"/.exec(body);
              if (l) lids.push(l[1]!);
            }
          } else cur.errors++;
        } else {
          cur.beacons++;
          if (status >= 400) cur.errors++;
        }
        paced();
      }
    });
    sock.on('close', () => {
      if (!stopped) m().errors++;
    });
    sock.on('error', () => undefined);
  }
  return {
    answered200: () => ok200,
    // Sends no more, waits for the answers under way (each connection has at most one), then
    // closes: a lookup answered after its socket closed is counted by ivtd but not here.
    async stop() {
      stopped = true;
      await sleep(1000);
      for (const x of socks) x.destroy();
    },
  };
}

const p99 = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : Math.round(s[Math.floor(s.length * 0.99)]! * 100) / 100;
};

async function main(): Promise<void> {
  const target = chooseTarget();
  const s = await startServer(target, 2, { args: ['--flush-interval', String(FLUSH)] });
  const api = `http://127.0.0.1:${s.ports.api}`;
  const login = await fetch(`${api}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `username=${encodeURIComponent(s.creds.username)}&password=${encodeURIComponent(s.creds.password)}` });
  let token = ((await login.json()) as { access_token: string }).access_token;
  let key = s.creds.key;
  const lids: string[] = [];

  // Saturation: as fast as answered for 10 s, then half of it.
  let minute = fresh();
  let rate = numArg('rate', 0);
  if (rate === 0) {
    const sat = drive(s, 0, () => key, () => minute, []);
    await sleep(10_000);
    await sat.stop();
    rate = Math.round(minute.lookups / 10 / 2);
  }
  console.log(JSON.stringify({ bench: 'soak', target: target.label, minutes: MINUTES, rate_per_s: rate, connections: CONNECTIONS }));
  const basic = Buffer.from(`${s.creds.customer}:${s.creds.reporting}`).toString('base64');
  const reportTotal = async (): Promise<number | null> => {
    const day = new Date().toISOString().slice(0, 10);
    const r = await fetch(`http://127.0.0.1:${s.ports.reporting}/v1/report?start_date=${day}&end_date=${day}`, { headers: { authorization: `Basic ${basic}` } });
    if (r.status !== 200) return null;
    return ((await r.json()) as { rows: Array<{ total_transactions?: number }> }).rows[0]?.total_transactions ?? 0;
  };
  const before = await reportTotal(); // the saturation phase's lookups, once flushed
  // The saturation phase's last lookups (answered as its sockets closed) reach the report within
  // a thread's counts interval plus a flush: two flushes' wait leaves none to land in the soak's.
  await sleep((2 * FLUSH + 2) * 1000);
  const base = (await reportTotal()) ?? 0;

  minute = fresh();
  const load = drive(s, rate, () => key, () => minute, lids);
  const samples: Array<Record<string, unknown>> = [];
  let sideErrors = 0;
  for (let m = 1; m <= MINUTES; m++) {
    const t0 = Date.now();
    // Once a minute: a reload, a feedback upload, a report; every five: a key rotation.
    process.kill(s.pid, 'SIGHUP');
    if (lids.length > 0) {
      const labels = lids.slice(-50).map((lid, i) => ({ lid, label: i % 2 === 0 ? 'invalid' : 'valid', source: 'soak' }));
      const r = await fetch(`${api}/v1/feedback`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ labels }) });
      if (r.status === 401 || r.status === 400) {
        const again = await fetch(`${api}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `username=${encodeURIComponent(s.creds.username)}&password=${encodeURIComponent(s.creds.password)}` });
        token = ((await again.json()) as { access_token: string }).access_token;
      } else if (r.status !== 200) sideErrors++;
    }
    if (m % 5 === 0) {
      const r = await fetch(`${api}/v1/account/keys/rotate`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ kind: 'prebid', grace_seconds: 120 }) });
      if (r.status === 200) key = ((await r.json()) as { key: string }).key;
      else sideErrors++;
    }
    if ((await reportTotal()) === null) sideErrors++;
    await sleep(Math.max(0, MINUTE_S * 1000 - (Date.now() - t0)));
    const cur = minute;
    minute = fresh();
    const row = { minute: m, rss_mb: rssMb(s.pid), lookups: cur.lookups, beacons: cur.beacons, p99_ms: p99(cur.latencies), errors: cur.errors, side_errors: sideErrors };
    samples.push(row);
    console.log(JSON.stringify(row));
  }
  await load.stop();
  await sleep((FLUSH + 2) * 1000);
  const reported = ((await reportTotal()) ?? NaN) - base;
  const firstFive = samples.slice(0, Math.min(5, samples.length));
  const p99First = Math.max(...firstFive.map((r) => r.p99_ms as number));
  const rssAt5 = (samples[Math.min(4, samples.length - 1)]!.rss_mb as number);
  const summary = {
    minutes: MINUTES, rate_per_s: rate, rate_achieved_per_s: Math.round(samples.reduce((a, r) => a + (r.lookups as number) + (r.beacons as number), 0) / (samples.length * MINUTE_S)), answered_200: load.answered200(), reported_lookups: reported, saturation_phase_reported_first: before,
    errors: samples.reduce((a, r) => a + (r.errors as number), 0) + sideErrors,
    p99_first_five_ms: p99First, p99_worst_after_ms: Math.max(...samples.slice(5).map((r) => r.p99_ms as number)),
    rss_after_five_mb: rssAt5, rss_end_mb: samples.at(-1)!.rss_mb,
    lived: s.child.exitCode === null && s.child.signalCode === null,
  };
  console.log(JSON.stringify(summary));
  await stopProcess(s.child);
  rmSync(s.dataDir, { recursive: true, force: true });
}

await main();
