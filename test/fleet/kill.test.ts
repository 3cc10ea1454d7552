// kill -9 of a fleet edge under lookup load, the cheap version of `npm run bench:kill -- --fleet`
// (bench/kill-fleet.ts, which both run): three kills at random moments: ClickHouse up, ClickHouse
// down (the spool holds rows), and just after it came back (the spool may be
// being delivered), each followed by a restart on the same data dir. The edge must start and
// serve every time, find its spool, never put a lookup into ClickHouse twice (never more than
// were answered; hourly and daily tables equal), and lose at most what was answered in each
// kill's last flush interval (docs/fleet.md, docs/reliability.md); the full instance's report
// agrees with ClickHouse at the end.
import t from 'tap';
import { runFleetKills } from '../../bench/kill-fleet.ts';
import { thisCheckout } from '../../bench/processes.ts';
import { clickhouseAvailable } from '../helpers/clickhouse.ts';

t.setTimeout(300_000); // ClickHouse, two ivtd processes and four starts of the edge on a shared host

t.test('fleet edge killed -9 three times under load: ClickHouse up, down, just back', { skip: clickhouseAvailable() ? false : 'clickhouse-server is not installed' }, async (t) => {
  let seed = (Math.random() * 0x7fffffff) >>> 0;
  t.comment(`seed ${seed}`);
  const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) / 16777216;
  const { rows, summary } = await runFleetKills({
    target: thisCheckout(), cycles: 3, minLoad: 2, maxLoad: 3, flush: 1, slack: 0.5, connections: 4, threads: 1, rand,
  });
  for (const r of rows) {
    t.ok(r.ok, `cycle ${r.cycle} (ClickHouse ${r.clickhouse}): ${r.problem ?? `opened (serving ${r.restart_s} s after the kill), spool ${r.spool_rows_at_restart} rows at restart` + (r.lost_since_check === null ? '' : `, lost ${r.lost_since_check} of at most ${r.allowed_since_check}, ${r.in_clickhouse} of ${r.answered_total} in ClickHouse`)}`);
  }
  t.equal(summary.cycles, 3, 'three kills, each restarted on the same data dir');
  t.equal(summary.failures, 0, 'no check failed');
  t.equal(summary.kills_with_clickhouse_down, 1, 'one kill while ClickHouse was down');
  t.ok(summary.kills_with_rows_spooled >= 1, `${summary.kills_with_rows_spooled} restarts found rows in the spool`);
  t.notOk(summary.over_counted, 'ClickHouse never held more lookups than were answered');
  t.ok(summary.answered_total > 1000, `${summary.answered_total} lookups answered`);
  t.ok(summary.in_clickhouse !== null && summary.in_clickhouse > 0, `${summary.in_clickhouse} in ClickHouse at the end`);
  t.equal(summary.reported_at_end, summary.in_clickhouse, 'the full instance reports what ClickHouse holds');
  t.equal(summary.dropped_batches, 0, 'no spool batch dropped');
});
