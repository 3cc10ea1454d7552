// The rollup tables (migration 20) and the reporting dimensions stay in step.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DIMENSIONS, FILTERS, TUPLE_DIMENSIONS } from '../../src/enums.ts';
import { ROLLUP_COLUMNS, ROLLUP_TABLES, columnType } from '../../src/reporting/columns.ts';
import { Store } from '../../src/store/db.ts';

t.test('each rollup table has one column per tuple dimension, of the type the writer sends', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-schema-'));
  const store = await Store.open(dir);
  t.teardown(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  for (const table of Object.values(ROLLUP_TABLES)) {
    const cols = await store.all<{ column_name: string; data_type: string }>(
      'SELECT column_name, data_type FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position',
      [table],
    );
    t.same(cols.map((c) => c.column_name), ROLLUP_COLUMNS, `${table}: columns in table order`);
    for (const d of TUPLE_DIMENSIONS) {
      t.equal(cols.find((c) => c.column_name === d)?.data_type, columnType(d), `${table}: ${d} type`);
    }
  }
  t.same(
    DIMENSIONS.filter((d) => !(TUPLE_DIMENSIONS as readonly string[]).includes(d)),
    ['date', 'hour'],
    'date and hour come from period_start',
  );
  t.ok(FILTERS.every((f) => (TUPLE_DIMENSIONS as readonly string[]).includes(f)), 'every filter is a stored column');
});
