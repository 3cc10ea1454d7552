// kill -9 under load, the cheap version of bench/kill.ts (`npm run bench:kill` runs twenty):
// three times in a row, `ivtd serve` is killed at a random moment while lookups are being
// answered, then started again on the same data dir. The data dir must open every time, the
// report must never show more lookups than were answered, and a kill may lose only what was
// answered in its last flush interval (docs/reliability.md).
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServe, type ServeProcess } from '../helpers/serve-process.ts';

const FLUSH_S = 1;
const UA = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36');

interface Creds {
  customer: string;
  partner: string;
  key: string;
  reporting: string;
}

async function serve(dir: string): Promise<{ proc: ServeProcess; prebid: number; reporting: number }> {
  const proc = startServe(['--data-dir', dir, '--prebid-port', '0', '--api-port', '0', '--reporting-port', '0', '--metrics-port', '0', '--threads', '1', '--flush-interval', String(FLUSH_S)], { IVTD_LOG_LEVEL: 'info' });
  const m = await proc.waitFor(/"ports":\{"prebid":(\d+),"api":(\d+),"reporting":(\d+)/);
  await proc.waitFor(/"msg":"ivtd ready"/);
  return { proc, prebid: Number(m[1]), reporting: Number(m[3]) };
}

t.test('kill -9 at random moments: the data dir opens, no report above the answered, at most a flush interval lost', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-kill-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let s = await serve(dir);
  const field = (name: string) => new RegExp(`^ +${name} +(\\S+)$`, 'm').exec(s.proc.out())![1]!;
  const creds: Creds = { customer: field('customer_id'), partner: field('partner_id'), key: field('prebid_key'), reporting: field('reporting_key') };
  const auth = `Basic ${Buffer.from(`${creds.customer}:${creds.reporting}`).toString('base64')}`;
  let answered = 0;
  let lostBefore = 0;
  for (let cycle = 1; cycle <= 3; cycle++) {
    const times: number[] = [];
    const until = Date.now() + 1500 + Math.random() * 2000;
    let i = 0;
    const worker = async () => {
      while (Date.now() < until) {
        const q = `p=${creds.partner}&k=${creds.key}&pub=pub-${i % 3}&node=n1&ip=81.2.69.${i % 250}&ua=${UA}&uid=u-${i}&sid=exchange1.example&adt=1&dvt=2`;
        i++;
        const r = await fetch(`http://127.0.0.1:${s.prebid}/api/v1/ivt/lookup?${q}`);
        await r.arrayBuffer();
        if (r.status === 200) times.push(Date.now());
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    const killedAt = Date.now();
    s.proc.child.kill('SIGKILL');
    await s.proc.exited;
    answered += times.length;
    const window = times.filter((x) => x > killedAt - (FLUSH_S + 1) * 1000).length;
    s = await serve(dir); // throws (and fails the test) when the data dir does not open
    t.teardown(() => void (s.proc.child.exitCode === null && s.proc.child.kill('SIGKILL')));
    t.pass(`cycle ${cycle}: the data dir opened again`);
    const day = new Date().toISOString().slice(0, 10);
    const r = await fetch(`http://127.0.0.1:${s.reporting}/v1/report?start_date=${day}&end_date=${day}`, { headers: { authorization: auth } });
    t.equal(r.status, 200, `cycle ${cycle}: the report is read`);
    const reported = ((await r.json()) as { rows: Array<{ total_transactions?: number }> }).rows[0]?.total_transactions ?? 0;
    t.ok(reported <= answered, `cycle ${cycle}: reported ${reported} <= answered ${answered}`);
    const lost = answered - reported - lostBefore;
    t.ok(lost <= window, `cycle ${cycle}: lost ${lost} of ${times.length}, at most the ${window} answered in the last ${FLUSH_S + 1} s`);
    lostBefore = answered - reported;
  }
  t.ok(answered > 30, `${answered} lookups answered in all`);
  s.proc.child.kill('SIGTERM');
  await s.proc.exited;
});
