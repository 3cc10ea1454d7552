// The ClickHouse basics against a real server: the one literal-escaping function with
// hostile values (a literal must mean exactly the string, and find exactly the row a JSON
// insert stored), the --clickhouse-url rule, and the versioned schema.
import t from 'tap';
import { ClickHouse } from '../../src/fleet/clickhouse.ts';
import { CLICKHOUSE_MIGRATIONS, CLICKHOUSE_SCHEMA_VERSION, clickhouseSchemaVersion, migrateClickHouse } from '../../src/fleet/schema.ts';
import { sqlIdentifier, sqlInt, sqlList, sqlString, toStoredString } from '../../src/fleet/sql.ts';
import { ClickHouseUrlError, parseClickHouseUrl } from '../../src/base/clickhouse-url.ts';
import { clickhouseAvailable, startClickHouse } from '../helpers/clickhouse.ts';
import { HOSTILE } from './rows.ts';


t.test('sqlString: the literal rule', async (t) => {
  t.equal(sqlString("it's"), "'it\\'s'");
  t.equal(sqlString('a\\b'), "'a\\\\b'");
  t.equal(sqlString('a\u0000\n\u007f'), "'a\\x00\\x0a\\x7f'");
  t.equal(sqlString('é😀'), "'é😀'");
  t.equal(sqlString('\ud800'), "'\ufffd'");
  t.equal(toStoredString('a\udc00b\ud83d\ude00'), 'a\ufffdb\ud83d\ude00', 'pairs stay, lone halves become U+FFFD');
  t.throws(() => sqlString(5 as unknown as string), TypeError);
  t.equal(sqlInt(-12), '-12');
  t.throws(() => sqlInt(1.5), RangeError);
  t.throws(() => sqlInt(Number.NaN), RangeError);
  t.throws(() => sqlInt(2 ** 53), RangeError);
  t.equal(sqlList(['a', 3]), "('a', 3)");
  t.throws(() => sqlList([]), RangeError);
  t.equal(sqlIdentifier('ivtd_2'), 'ivtd_2');
  for (const bad of ['', '2x', 'a-b', 'a.b', 'a b', '`x`', 'x'.repeat(64)]) t.throws(() => sqlIdentifier(bad), RangeError, bad);
});

t.test('parseClickHouseUrl', async (t) => {
  t.same(parseClickHouseUrl('http://127.0.0.1:8123'), {
    origin: 'http://127.0.0.1:8123',
    username: 'default',
    password: '',
    database: 'ivtd',
    display: 'http://127.0.0.1:8123/ivtd',
  });
  const a = parseClickHouseUrl('http://writer:p%40ss%3Aw%2Frd@ch.example:9123/fleet_1');
  t.equal(a.username, 'writer');
  t.equal(a.password, 'p@ss:w/rd');
  t.equal(a.database, 'fleet_1');
  t.equal(a.origin, 'http://ch.example:9123');
  t.notMatch(a.display, /p@ss|p%40ss/, 'the password never reaches logs');
  t.equal(parseClickHouseUrl('https://ch.example/').origin, 'https://ch.example:8443');
  t.equal(parseClickHouseUrl('http://[::1]:8123/').origin, 'http://[::1]:8123');
  for (const bad of ['ch.example:8123', 'ftp://ch.example', 'http://ch.example:8123/a/b', 'http://ch.example:8123/db-x', 'http://h:1/db?x=1', 'http://h:1/1db', 'http://%zz@h:1/']) {
    t.throws(() => parseClickHouseUrl(bad), ClickHouseUrlError, bad);
  }
});

t.test('against a real ClickHouse', { skip: clickhouseAvailable() ? false : 'clickhouse-server is not installed' }, async (t) => {
  const server = await startClickHouse({ users: { writer: "p@ss:w/rd'<&" } });
  t.teardown(() => server.destroy());

  t.test('hostile literals mean exactly their string and find exactly the stored row', async (t) => {
    const ch = new ClickHouse(parseClickHouseUrl(server.url('literals')));
    t.teardown(() => ch.close());
    await ch.ensureDatabase();
    for (const v of HOSTILE) {
      const [row] = await ch.rows<{ v: string; n: number | string }>(`SELECT ${sqlString(v)} AS v, length(${sqlString(v)}) AS n`);
      t.equal(row?.v, toStoredString(v), `select literal ${JSON.stringify(v)}`);
      t.equal(Number(row?.n), Buffer.byteLength(toStoredString(v)), `byte length of ${JSON.stringify(v)}`);
    }
    await ch.command('CREATE TABLE IF NOT EXISTS vals (i UInt32, v String) ENGINE = MergeTree() ORDER BY i');
    await ch.insert('vals', HOSTILE.map((v, i) => ({ i, v: toStoredString(v) })));
    for (const [i, v] of HOSTILE.entries()) {
      const rows = await ch.rows<{ i: number }>(`SELECT i FROM vals WHERE v = ${sqlString(v)} ORDER BY i`);
      // '' and ' ' and the two surrogate strings are distinct values; each finds only itself.
      t.same(rows.map((r) => Number(r.i)), [i], `WHERE v = literal of ${JSON.stringify(v)}`);
    }
    const all = await ch.rows<{ n: string }>(`SELECT count() AS n FROM vals WHERE v IN ${sqlList(HOSTILE)}`);
    t.equal(Number(all[0]?.n), HOSTILE.length, 'IN list of every hostile value');
    t.same(await ch.rows('SELECT name FROM system.tables WHERE database = ' + sqlString('literals') + " AND name = 'rollups_hourly'"), [], 'no injected statement ran');
  });

  t.test('migrations create the database and tables once, with a user and password from the URL', async (t) => {
    const ch = new ClickHouse(parseClickHouseUrl(server.url('fleet_a', { user: 'writer', password: "p@ss:w/rd'<&" })));
    t.teardown(() => ch.close());
    t.equal(await migrateClickHouse(ch), CLICKHOUSE_SCHEMA_VERSION);
    t.equal(await migrateClickHouse(ch), CLICKHOUSE_SCHEMA_VERSION, 'a second run changes nothing');
    t.equal(await clickhouseSchemaVersion(ch), CLICKHOUSE_SCHEMA_VERSION);
    const tables = await ch.rows<{ name: string; engine: string }>(`SELECT name, engine FROM system.tables WHERE database = 'fleet_a' ORDER BY name`);
    t.same(
      tables.map((r) => `${r.name}:${r.engine}`),
      [
        'activity:MergeTree', 'activity_buffer:Buffer', 'activity_view:MergeTree', 'bot_ip_keys:MergeTree', 'bot_ips:MergeTree', 'customer_policies:MergeTree', 'imp_rollups_daily:SummingMergeTree', 'imp_rollups_hourly:SummingMergeTree', 'lid_secrets:MergeTree',
        'prebid_keys:MergeTree', 'rollups_daily:SummingMergeTree', 'rollups_hourly:SummingMergeTree', 'schema_migrations:MergeTree', 'seen_lids:MergeTree',
      ],
    );
    const [imp] = await ch.rows<{ sorting_key: string }>(`SELECT sorting_key FROM system.tables WHERE database = 'fleet_a' AND name = 'imp_rollups_hourly'`);
    t.match(imp?.sorting_key, /p5, category, band, imp_status$/, "the impressions' sorting key holds every dimension (the merges sum only equal tuples)");
    const ledger = await ch.rows<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
    t.same(ledger.map((r) => Number(r.version)), CLICKHOUSE_MIGRATIONS.map((m) => m.version), 'each migration recorded once');
  });

  t.test('a database of schema 2 gets the category dimension: rows kept, categories kept apart by the merges', async (t) => {
    const ch = new ClickHouse(parseClickHouseUrl(server.url('fleet_up')));
    t.teardown(() => ch.close());
    t.equal(await migrateClickHouse(ch, 2), 2, 'the schema of the release before the category');
    const hour = Math.floor(Date.now() / 3_600_000) * 3600;
    const row = (extra: Record<string, string | number>) => ({ customer_id: 'c1', period_start: hour, pub: 'pub-1', adt: 1, dvt: 2, geo: 'US', env: 'site', total: 5, givt: 2, sivt: 1, ...extra });
    // Two INSERTs, two parts: the merge after the upgrade must still sum them.
    await ch.insert('rollups_hourly', [row({})]);
    await ch.insert('rollups_hourly', [row({ total: 1, givt: 0, sivt: 0 })]);
    // A host stopped halfway through migration 3 on another host: one table already has the column.
    await ch.command(`ALTER TABLE rollups_daily ADD COLUMN category String, MODIFY ORDER BY (customer_id, period_start, pub, sid, app, dmn, node, adt, geo, dvt, os, browser, env, cmp, adv, p1, p2, p3, p4, p5, category)`);

    t.equal(await migrateClickHouse(ch), CLICKHOUSE_SCHEMA_VERSION, 'upgraded');
    t.equal(await migrateClickHouse(ch), CLICKHOUSE_SCHEMA_VERSION, 'a second run changes nothing');
    for (const table of ['rollups_hourly', 'rollups_daily']) {
      const [meta] = await ch.rows<{ sorting_key: string }>(`SELECT sorting_key FROM system.tables WHERE database = 'fleet_up' AND name = ${sqlString(table)}`);
      t.match(meta?.sorting_key, /p5, category$/, `${table}: category ends the sorting key`);
      const cols = await ch.rows<{ type: string }>(`SELECT type FROM system.columns WHERE database = 'fleet_up' AND table = ${sqlString(table)} AND name = 'category'`);
      t.same(cols.map((c) => c.type), ['String'], `${table}: one category column`);
    }
    await ch.insert('rollups_hourly', [row({ category: 'data_center', total: 3, givt: 3, sivt: 0 }), row({ category: 'none', total: 7, givt: 0, sivt: 0 })]);
    await ch.insert('rollups_hourly', [row({ category: 'data_center', total: 1, givt: 0, sivt: 1 })]);
    await ch.command('OPTIMIZE TABLE rollups_hourly FINAL');
    // No sum() in the SELECT: what the merges themselves kept, row by row.
    const rows = await ch.rows<Record<string, string>>('SELECT category, total, givt, sivt FROM rollups_hourly ORDER BY category');
    t.same(
      rows.map((r) => [r.category, Number(r.total), Number(r.givt), Number(r.sivt)]),
      [['', 6, 2, 1], ['data_center', 4, 3, 1], ['none', 7, 0, 0]],
      "the old rows as '' (not recorded), each category its own row",
    );
    const ledger = await ch.rows<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
    t.same(ledger.map((r) => Number(r.version)), CLICKHOUSE_MIGRATIONS.map((m) => m.version), 'each migration recorded once');
  });

  t.test('a database from a newer ivtd is refused', async (t) => {
    const ch = new ClickHouse(parseClickHouseUrl(server.url('fleet_b')));
    t.teardown(() => ch.close());
    await migrateClickHouse(ch);
    await ch.insert('schema_migrations', [{ version: CLICKHOUSE_SCHEMA_VERSION + 1, name: 'future', applied_at: 0 }]);
    await t.rejects(migrateClickHouse(ch), /newer than this ivtd knows/);
  });

  t.test('wrong password and unreachable server say so', async (t) => {
    const bad = new ClickHouse(parseClickHouseUrl(server.url('fleet_c', { user: 'writer', password: 'nope' })));
    t.teardown(() => bad.close());
    const e1 = (await bad.rows('SELECT 1').catch((e: unknown) => e)) as Error & { chCode: number | null };
    t.match(e1, { name: 'FleetError', chCode: Number });
    t.match(e1.message, /ClickHouse http:\/\/writer:\*\*\*@127\.0\.0\.1:\d+\/fleet_c/, 'the message names the server, password masked');
    const gone = new ClickHouse(parseClickHouseUrl('http://127.0.0.1:1/ivtd'));
    t.teardown(() => gone.close());
    const e2 = (await gone.rows('SELECT 1').catch((e: unknown) => e)) as Error & { uncertain: boolean };
    t.match(e2, { name: 'FleetError', chCode: null, uncertain: false });
    t.match(e2.message, /unreachable \(ECONNREFUSED\)/);
  });
});
