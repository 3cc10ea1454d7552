// Nothing lost on a graceful stop: the lookup threads hand over their last counts, the
// writer flushes them, and a server started again on the same data dir reports them.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer } from '../helpers/server.ts';
import { fixtureQuery, lookup, recentDays, report, withParams } from './client.ts';

t.test('stop flushes the last counts; a restart reads them back', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-restart-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));

  // An hour-long flush interval: only the shutdown path can write these counts.
  const first = await startTestServer({ flushInterval: 3600 }, dir);
  const base = fixtureQuery('residential-desktop-chrome');
  for (let i = 0; i < 4; i++) await lookup(first, base);
  await lookup(first, withParams(base, { pub: 'pub-late' }));
  await first.stop();

  const second = await startTestServer({}, dir);
  t.teardown(() => second.stop());
  const r = await report(second, { ...recentDays(), group_by: 'pub' }, { customer: first.customer });
  t.equal(r.status, 200, "the first run's customer and key still work");
  t.same(
    r.body.rows.map((x: any) => [x.pub, x.total_transactions]),
    [['pub-123', 4], ['pub-late', 1]],
    'every lookup of the first run was written on stop',
  );
});
