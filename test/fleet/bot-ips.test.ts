// Fleet-wide bot IPs and ClickHouse retention against a real ClickHouse: the publication
// bound, the documented rule over several hosts and the window, the pull bound, and the
// partitions that retention drops.
import t, { type Test } from 'tap';
import { insertRows } from '../../src/reporting/batches.ts';
import { BOT_IPS, boundBotIps, dropOldBotIps, publishBotIps, pullFleetBotIps } from '../../src/fleet/bot-ips.ts';
import { ClickHouse } from '../../src/fleet/clickhouse.ts';
import { dropExpiredRollups } from '../../src/fleet/retention.ts';
import { migrateClickHouse } from '../../src/fleet/schema.ts';
import { parseClickHouseUrl } from '../../src/base/clickhouse-url.ts';
import { clickhouseAvailable, startClickHouse } from '../helpers/clickhouse.ts';
import { DAY, dims } from './rows.ts';

const MIN = 60_000;
const NOW = Date.UTC(2031, 5, 15, 12, 30, 10);

t.test('boundBotIps keeps valid rows, the most invalid first, at most perHost', async (t) => {
  const rows = [
    { ip: '192.0.2.1', lookups: 10, invalid: 3 },
    { ip: '2001:DB8::1', lookups: 50, invalid: 40 },
    { ip: 'not-an-ip', lookups: 10, invalid: 10 },
    { ip: '192.0.2.2', lookups: 5, invalid: 6 }, // more invalid than lookups
    { ip: '192.0.2.3', lookups: 5, invalid: 0 },
    { ip: '192.0.2.4', lookups: 1.5, invalid: 1 },
    { ip: '192.0.2.5', lookups: 20, invalid: 20 },
  ];
  t.same(boundBotIps(rows), [
    { ip: '2001:db8::1', lookups: 50, invalid: 40 },
    { ip: '192.0.2.5', lookups: 20, invalid: 20 },
    { ip: '192.0.2.1', lookups: 10, invalid: 3 },
  ]);
  t.equal(boundBotIps(rows, 2).length, 2);
  const many = Array.from({ length: BOT_IPS.perHost + 500 }, (_, i) => ({ ip: `10.0.${i >> 8}.${i & 255}`, lookups: 100, invalid: 1 + (i % 90) }));
  const kept = boundBotIps(many);
  t.equal(kept.length, BOT_IPS.perHost);
  const keptIps = new Set(kept.map((r) => r.ip));
  const lowestKept = Math.min(...kept.map((r) => r.invalid));
  t.ok(many.filter((r) => !keptIps.has(r.ip)).every((r) => r.invalid <= lowestKept), 'the dropped rows are the least invalid');
});

t.test('against a real ClickHouse', { skip: clickhouseAvailable() ? false : 'clickhouse-server is not installed' }, async (t) => {
  const server = await startClickHouse();
  t.teardown(() => server.destroy());
  let n = 0;
  async function fleet(t: Test) {
    const ch = new ClickHouse(parseClickHouseUrl(server.url(`bots_${++n}`)));
    t.teardown(() => ch.close());
    await migrateClickHouse(ch);
    return ch;
  }

  t.test('the rule: summed over hosts and the window, enough invalid lookups and a high enough share', async (t) => {
    const ch = await fleet(t);
    // 203.0.113.1: 6 invalid on each of two hosts → 12 ≥ 10, share 12/16 → in.
    await publishBotIps(ch, 'edge-1', [{ ip: '203.0.113.1', lookups: 8, invalid: 6 }, { ip: '203.0.113.2', lookups: 9, invalid: 9 }], NOW);
    await publishBotIps(ch, 'edge-2', [{ ip: '203.0.113.1', lookups: 8, invalid: 6 }], NOW - 3 * MIN);
    // .2: 9 invalid only → out. .3: 30 invalid but share 30/100 → out.
    await publishBotIps(ch, 'edge-2', [{ ip: '203.0.113.3', lookups: 100, invalid: 30 }], NOW);
    // .4: 50 invalid, but 20 minutes ago → outside the window.
    await publishBotIps(ch, 'edge-3', [{ ip: '203.0.113.4', lookups: 50, invalid: 50 }], NOW - 20 * MIN);
    // .5: one host, 40 of 50 → in, and first (most invalid).
    await publishBotIps(ch, 'edge-3', [{ ip: '2001:db8::5', lookups: 50, invalid: 40 }], NOW - MIN);
    t.same(await pullFleetBotIps(ch, NOW), ['2001:db8::5', '203.0.113.1']);
    t.same(await pullFleetBotIps(ch, NOW + 20 * MIN), [], 'everything ages out of the window');
  });

  t.test('the pull is bounded by fleetMax', async (t) => {
    const ch = await fleet(t);
    const total = BOT_IPS.fleetMax + 300;
    for (let host = 0; host * BOT_IPS.perHost < total; host++) {
      const rows = [];
      for (let i = host * BOT_IPS.perHost; i < Math.min(total, (host + 1) * BOT_IPS.perHost); i++) {
        rows.push({ ip: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, lookups: 20 + (i % 7), invalid: 20 + (i % 7) });
      }
      t.equal(await publishBotIps(ch, `edge-${host}`, rows, NOW), rows.length);
    }
    const ips = await pullFleetBotIps(ch, NOW);
    t.equal(ips.length, BOT_IPS.fleetMax);
    t.equal(new Set(ips).size, ips.length);
  });

  t.test('retention drops old daily partitions of bot IPs', async (t) => {
    const ch = await fleet(t);
    for (const d of [0, 1, 2, 3, 5]) await publishBotIps(ch, 'edge-1', [{ ip: '198.51.100.1', lookups: 1, invalid: 1 }], NOW - d * DAY);
    t.equal(await dropOldBotIps(ch, NOW), 2, 'days 3 and 5 ago');
    const left = await ch.rows<{ n: string }>('SELECT count() AS n FROM bot_ips');
    t.equal(Number(left[0]!.n), 3);
  });

  t.test('rollup retention drops only months wholly before the window', async (t) => {
    const ch = await fleet(t);
    for (const month of [0, 1, 2, 3, 4]) {
      const hour = Date.UTC(2031, 5 - month, 10);
      const batch = { batchId: `b${month}`, rows: [{ customerId: 'c', hour, dims: dims(), total: 1, givt: 0, sivt: 0 }] };
      await ch.insert('rollups_hourly', insertRows('hour', batch));
      await ch.insert('rollups_daily', insertRows('day', batch));
    }
    // 60 days before 2031-06-15 is 2031-04-16: April is partly kept, March and February go.
    t.equal(await dropExpiredRollups(ch, 60, NOW), 4, 'two months in each table');
    const months = await ch.rows<{ m: number }>('SELECT DISTINCT toYYYYMM(period_start) AS m FROM rollups_hourly ORDER BY m');
    t.same(months.map((r) => Number(r.m)), [203104, 203105, 203106]);
  });
});
