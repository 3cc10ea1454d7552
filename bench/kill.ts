// kill -9 at random moments under load, `--cycles` (20) times in a row, each followed by a
// restart on the same data dir. Checks after each restart: the data dir opened (the server
// came back ready); no report shows more lookups than were answered (200s, counted by the
// client over every run so far); and what a kill lost is at most the lookups answered in the
// last flush interval before it (+ `--slack` s, for the flush's own time).
//   node --import tsx bench/kill.ts [--cycles 20] [--min-load 3] [--max-load 8]
//        [--flush-interval 2] [--slack 1] [--connections 8] [--seed N] [--ivtd PATH | --checkout DIR]
// `--fleet`: the same for a fleet edge and its spool, on a real ClickHouse (bench/kill-fleet.ts;
// --flush-interval defaults to 1 there; a third of the kills come while ClickHouse is down).
import { rmSync } from 'node:fs';
import { numArg, sleep } from './processes.ts';
import { chooseTarget, startServer, type Server } from './hostile-server.ts';
import { killLoad } from './kill-load.ts';
import { runFleetKills } from './kill-fleet.ts';

const CYCLES = numArg('cycles', 20);
const MIN_LOAD = numArg('min-load', 3);
const MAX_LOAD = numArg('max-load', 8);
const FLUSH = numArg('flush-interval', 2);
const SLACK = numArg('slack', 1);
const CONNECTIONS = numArg('connections', 8);
let seed = numArg('seed', (Math.random() * 0x7fffffff) | 0) >>> 0;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) / 16777216;

/** The lookups today's report counts (one total row), or null when the report cannot be read. */
async function reported(s: Server): Promise<number | null> {
  const day = new Date().toISOString().slice(0, 10);
  const auth = Buffer.from(`${s.creds.customer}:${s.creds.reporting}`).toString('base64');
  for (let attempt = 0; attempt < 5; attempt++) {
    const r = await fetch(`http://127.0.0.1:${s.ports.reporting}/v1/report?start_date=${day}&end_date=${day}`, { headers: { authorization: `Basic ${auth}` } });
    if (r.status === 429) {
      await sleep(1000 * Number(r.headers.get('retry-after') ?? 1));
      continue;
    }
    if (r.status !== 200) return null;
    const body = (await r.json()) as { rows: Array<{ total_transactions?: number }> };
    return body.rows[0]?.total_transactions ?? 0;
  }
  return null;
}

/** `--fleet`: an edge of a fleet on a real ClickHouse instead (bench/kill-fleet.ts). */
async function fleet(): Promise<void> {
  const target = chooseTarget();
  const flush = numArg('flush-interval', 1);
  console.log(JSON.stringify({ bench: 'kill --fleet', target: target.label, cycles: CYCLES, flush_interval_s: flush, seed }));
  const { summary } = await runFleetKills({
    target, cycles: CYCLES, minLoad: MIN_LOAD, maxLoad: MAX_LOAD, flush, slack: SLACK, connections: CONNECTIONS, rand,
    onCycle: (row) => console.log(JSON.stringify(row)),
  });
  console.log(JSON.stringify(summary));
  process.exit(summary.failures === 0 ? 0 : 1);
}

async function main(): Promise<void> {
  const target = chooseTarget();
  console.log(JSON.stringify({ bench: 'kill', target: target.label, cycles: CYCLES, flush_interval_s: FLUSH, seed }));
  const args = ['--flush-interval', String(FLUSH)];
  let s = await startServer(target, 2, { args });
  const dataDir = s.dataDir;
  const creds = s.creds;
  let answeredTotal = 0;
  let lostBefore = 0;
  const rows: unknown[] = [];
  let failures = 0;
  try {
    for (let k = 1; k <= CYCLES; k++) {
      const l = killLoad(s.ports.prebid, s.creds, CONNECTIONS);
      const ms = (MIN_LOAD + rand() * (MAX_LOAD - MIN_LOAD)) * 1000;
      await sleep(ms);
      const killedAt = Date.now();
      s.child.kill('SIGKILL');
      l.stop();
      await new Promise((r) => (s.child.exitCode !== null || s.child.signalCode !== null ? r(null) : s.child.once('exit', r)));
      // Answers that came after the kill are impossible; every 200 counted before it.
      answeredTotal += l.answered.length;
      const lastInterval = l.answered.filter((t) => t > killedAt - (FLUSH + SLACK) * 1000).length;
      let opened = true;
      try {
        s = await startServer(target, 2, { args, dataDir, creds });
      } catch (e) {
        opened = false;
        console.log(JSON.stringify({ cycle: k, opened, error: (e as Error).message.slice(0, 500) }));
        failures++;
        break;
      }
      const rep = await reported(s);
      const lost = rep === null ? null : answeredTotal - rep;
      const lostNow = lost === null ? null : lost - lostBefore;
      const ok = rep !== null && rep <= answeredTotal && lostNow !== null && lostNow <= lastInterval;
      if (!ok) failures++;
      if (lost !== null) lostBefore = lost;
      const row = { cycle: k, load_s: Math.round(ms / 100) / 10, answered_this_run: l.answered.length, answered_total: answeredTotal, reported_total: rep, lost_this_kill: lostNow, answered_in_last_flush_interval: lastInterval, opened, ok };
      rows.push(row);
      console.log(JSON.stringify(row));
    }
  } finally {
    s.child.kill('SIGKILL');
  }
  const summary = {
    cycles: rows.length, failures, answered_total: answeredTotal, lost_total: lostBefore,
    lost_ratio: answeredTotal > 0 ? Math.round((lostBefore / answeredTotal) * 10000) / 10000 : null,
    over_reported: rows.some((r) => (r as { reported_total: number | null }).reported_total !== null && (r as { reported_total: number }).reported_total > (r as { answered_total: number }).answered_total),
  };
  console.log(JSON.stringify(summary));
  rmSync(dataDir, { recursive: true, force: true });
  process.exit(failures === 0 ? 0 : 1);
}

await (process.argv.includes('--fleet') ? fleet() : main());
