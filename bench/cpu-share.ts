// CPU seconds every process used while a closed-loop autocannon ran straight at the bare
// upstream and through the filter (one filter thread): who pays for each request.
//   node --import tsx bench/cpu-share.ts [--seconds 4] [--checkout DIR]
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { runClient } from './client.ts';
import { numArg, startIvtd, startProcess, stopProcess, strArg, thisCheckout } from './processes.ts';
import { Store } from '../src/store/db.ts';
import { createCustomer } from '../src/store/customers.ts';
import { bodies } from './filter-bodies.ts';

const SECONDS = numArg('seconds', 4);
const CHECKOUT = strArg('checkout', '');
const TICK = 100;

function snapshot(): Map<string, { name: string; ticks: number }> {
  const out = new Map<string, { name: string; ticks: number }>();
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        const st = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const rest = st.slice(st.lastIndexOf(')') + 2).split(' ');
        const comm = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')'));
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((x) => !x.startsWith('-') && x !== 'tsx').slice(1, 3).join(' ');
        out.set(`${pid}/${tid}`, { name: `${pid} ${cmd.slice(0, 60)} [${comm}]${cmd.includes('serve') ? ' tid ' + tid : ''}`, ticks: Number(rest[11]) + Number(rest[12]) });
      }
    } catch { /* gone */ }
  }
  return out;
}

const posts = bodies(1000);

const up = await startProcess(process.execPath, ['--import', 'tsx', 'bench/bare-upstream.ts', '120'], [/\{"port":(\d+)\}/]);
const upPort = Number(up.matches[0]![1]);
const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-cpushare-'));
const store = await Store.open(dataDir);
const c = await createCustomer(store, { name: 'Bench', username: 'bench', password: 'correct horse battery' });
await store.close();
const port = await new Promise<number>((resolve) => {
  const srv = createServer();
  srv.listen(0, '127.0.0.1', () => {
    const p = (srv.address() as AddressInfo).port;
    srv.close(() => resolve(p));
  });
});
const ivtd = await startIvtd(CHECKOUT === '' ? thisCheckout() : thisCheckout(CHECKOUT), {
  threads: 1, existing: { dataDir, partnerId: c.partner_id, key: c.prebid_key },
  args: ['--filter-port', String(port), '--filter-upstream', `http://127.0.0.1:${upPort}/openrtb2/auction`, '--filter-partner', c.partner_id, '--filter-timeout', '1000'],
});
const paths = ['/openrtb2/auction'];
await runClient({ kind: 'autocannon', port, paths, bodies: posts, rate: 0, seconds: 2, connections: 32 });
const ortbPaths = [`/api/v1/ivt/ortb?p=${c.partner_id}&k=${c.prebid_key}&node=bench`];
const LABELS = strArg('runs', 'straight,filter,ortb,straight,filter,ortb').split(',');
for (const label of LABELS) {
  const p = label === 'straight' ? upPort : label === 'filter' ? port : ivtd.prebidPort;
  const before = snapshot();
  const a = await runClient({ kind: 'autocannon', port: p, paths: label === 'ortb' ? ortbPaths : paths, bodies: posts, rate: 0, seconds: SECONDS, connections: 32 });
  const after = snapshot();
  const n = a.rps * SECONDS;
  const rows = new Map<string, number>();
  let total = 0;
  for (const [k, v] of after) {
    const d = v.ticks - (before.get(k)?.ticks ?? 0);
    if (d <= 0) continue;
    total += d;
    rows.set(v.name, (rows.get(v.name) ?? 0) + d);
  }
  console.log(`  ${((a.clientCpuMs / 1000) * 1e6 / n).toFixed(1).padStart(6)} µs/req ${(a.clientCpuMs / 1000).toFixed(2).padStart(5)} s  the client (autocannon)`);
  console.log(`${label}: ${a.rps} req/s; all CPU ${(total / TICK).toFixed(2)} s = ${((total / TICK) * 1e6 / n).toFixed(1)} µs/request`);
  for (const [name, d] of [...rows].sort((x, y) => y[1] - x[1]).slice(0, 12)) console.log(`  ${((d / TICK) * 1e6 / n).toFixed(1).padStart(6)} µs/req ${(d / TICK).toFixed(2).padStart(5)} s  ${name}`);
}
await ivtd.stop();
await stopProcess(up.child);
rmSync(dataDir, { recursive: true, force: true });
