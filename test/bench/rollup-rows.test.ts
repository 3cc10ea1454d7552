// bench:reporting's row generator against the real schema (every migration applied): the
// rows land in both rollup tables, every column filled by name (a column a migration adds
// later, like `category`, once broke it by position), and the real report engine reads them
// back with the sums the generator wrote, the daily rows agreeing with the hourly ones.
import t from 'tap';
import { generateRollups } from '../../bench/rollup-rows.ts';
import { ReportEngine } from '../../src/reporting/engine.ts';
import { createCustomer } from '../../src/store/customers.ts';
import { openStore } from '../helpers/store.ts';

const DAY_MS = 86_400_000;
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

t.test('bench:reporting rows: written by name into both tables, read back by the report engine', async (t) => {
  const store = await openStore(t);
  const customer = await createCustomer(store, { name: 'bench', username: 'bench-rows', password: 'bench-password-1' });
  const lastDay = Date.now() - (Date.now() % DAY_MS);
  const gen = await generateRollups(store, customer.customer_id, { rows: 2400, days: 3, hoursPerTuple: 8, lastDay });
  // 100 tuples x 3 days x 8 hours.
  t.equal(gen.hourly, 2400, 'hourly rows');
  // A tuple's day has a row per category its hours had (none, declared_crawler, activity).
  t.ok(gen.daily >= 300 && gen.daily <= 900, `daily rows: one to three per tuple and day (${gen.daily})`);

  const sums = await store.one<{ total: bigint; givt: bigint; sivt: bigint; bad: bigint }>(
    `SELECT sum(total)::BIGINT AS total, sum(givt)::BIGINT AS givt, sum(sivt)::BIGINT AS sivt,
       count(*) FILTER (WHERE (givt + sivt = 0) <> (category = 'none'))::BIGINT AS bad
     FROM rollups_hourly WHERE customer_id = $cid`,
    { cid: customer.customer_id },
  );
  t.equal(Number(sums!.bad), 0, "category 'none' exactly on the rows with no invalid transactions");

  const params = (groupBy: string) => new URLSearchParams({ start_date: day(lastDay - 2 * DAY_MS), end_date: day(lastDay), group_by: groupBy, limit: '1000' });
  const sum = (rows: any[], k: string) => rows.reduce((a, r) => a + r[k], 0);
  const engine = new ReportEngine(store, { retentionDays: 400 });
  const daily = await engine.run(customer.customer_id, params('geo'));
  const hourly = await engine.run(customer.customer_id, params('date,hour')); // (the hourly rows: 72 groups)
  t.equal(hourly.meta.total_rows, 72, 'every hour of the three days');
  for (const [name, r] of [['daily', daily], ['hourly', hourly]] as const) {
    t.equal(sum(r.rows, 'total_transactions'), Number(sums!.total), `${name} rows: total as generated`);
    t.equal(sum(r.rows, 'givt_transactions'), Number(sums!.givt), `${name} rows: GIVT as generated`);
    t.equal(sum(r.rows, 'sivt_transactions'), Number(sums!.sivt), `${name} rows: SIVT as generated`);
  }
  t.ok(Number(sums!.total) > 2400, 'the generated counts are not empty');
  const byCategory = await engine.run(customer.customer_id, params('category'));
  t.same(byCategory.rows.map((r: any) => r.category).sort(), ['activity', 'declared_crawler', 'none'], 'the categories written');
});
