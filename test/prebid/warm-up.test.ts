// A lookup thread's warm-up (src/prebid/warm-up.ts): it takes every path it means to (so a
// new required parameter cannot quietly turn it into a warm-up of the 400 path), and it
// leaves no trace: no history, no counts, no metrics, nothing in the reports.
import t from 'tap';
import { loadBundle } from '../../src/data/bundle.ts';
import { buildLookupData } from '../../src/prebid/lookup-data.ts';
import { WARM_UP_REFUSALS, warmUp, warmUpQueries } from '../../src/prebid/warm-up.ts';
import { startTestServer } from '../helpers/server.ts';
import { settle } from '../reporting/client.ts';

t.test('the warm-up answers every lookup it means to, in every band, GET and OpenRTB', async (t) => {
  const bundle = loadBundle({ dataDir: '/nonexistent', mmdbCountry: undefined, mmdbAsn: undefined, mmdbAnonymousIp: undefined });
  const data = buildLookupData(bundle, 1).data;
  const w = warmUp(data, 2);
  const perPass = w.lookups / 2;
  t.ok(perPass > warmUpQueries().length, `GET queries and OpenRTB bodies in a pass (${perPass})`);
  t.equal(w.answered, w.lookups - 2 * WARM_UP_REFUSALS, `all but the deliberate refusals answered 200 (${w.answered} of ${w.lookups})`);
  for (const band of ['low', 'medium', 'high'] as const) t.ok(w.bands[band] > 0, `band ${band} reached (${w.bands[band]})`);
  t.ok(w.ms > 0);
});

t.test('a warm-up that fails returns its error instead of throwing (the thread serves regardless)', async (t) => {
  const w = warmUp({} as Parameters<typeof warmUp>[0], 1);
  t.type(w.error, 'string', `the error is returned: ${w.error}`);
  t.equal(w.answered, 0);
  t.ok(w.ms >= 0);
});

t.test('a served thread warms up before its first lookup and leaves nothing behind', async (t) => {
  const srv = await startTestServer({ threads: 2 });
  t.teardown(() => srv.stop());
  const warm = srv.server.lookups.warmUpMs;
  t.equal(warm.length, 2);
  t.ok(warm.every((ms) => ms > 0), `each thread warmed up (${warm.join(', ')} ms)`);

  // The warm-up's own first lookup, asked by the real customer: the shared history has never seen its IP or uid.
  const own = warmUpQueries()[0]!;
  const q = own.replace(/^p=[^&]*&k=[^&]*/, `p=${srv.customer.partner_id}&k=${srv.customer.prebid_key}`);
  type Facts = { ipSeen: number; uidSeen: number; ipDistinctUas: number };
  const history = () => (srv.server.explainEngine().explain(q, Date.now()).signals as { history: Facts }).history;
  // (explain counts the lookup it explains: 1 is this one alone)
  const before = history();
  t.ok(before.ipSeen < 1.01 && before.uidSeen < 1.01 && before.ipDistinctUas === 1, `the warm-up's IP and uid are not in the shared history (${JSON.stringify(before)})`);

  const metrics = await (await fetch(`${srv.metrics}/metrics`)).text();
  t.notMatch(metrics, /^ivtd_lookup_requests_total\{[^}]*\} [1-9]/m, 'no lookup request counted');
  t.notMatch(metrics, /^ivtd_lookups_total\{[^}]*\} [1-9]/m, 'no verdict counted');

  // The threads hand their counts over every second: two rounds of them, then a flush.
  await new Promise((res) => setTimeout(res, 2_200));
  await srv.server.reporting!.flush();
  const counted = async () => (await srv.server.store.all<{ node: string; n: number }>('SELECT node, CAST(sum(total) AS INTEGER) AS n FROM rollups_hourly GROUP BY node ORDER BY node'));
  t.same(await counted(), [], 'nothing in the reporting store');

  // The same lookup on the port is remembered and counted: the checks above can fail.
  const r = await fetch(`${srv.prebid}/api/v1/ivt/lookup?${q}`);
  t.equal(r.status, 200, await r.clone().text());
  const after = history();
  t.ok(after.ipSeen > 1.9 && after.uidSeen > 1.9, `one real lookup is in the history (${JSON.stringify(after)})`);
  await settle(srv, 1);
  t.same(await counted(), [{ node: 'warm-up', n: 1 }], 'and in the reporting store');
});
