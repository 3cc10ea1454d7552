// A data reload (SIGHUP's path) keeps what the lookup threads have learnt: history lives in
// shared memory owned by the process, not by the data generation or a thread.
import t from 'tap';
import { startTestServer } from '../helpers/server.ts';

t.test('history survives a reload', async (t) => {
  const srv = await startTestServer({ threads: 2 });
  t.teardown(() => srv.stop());
  const api = `http://127.0.0.1:${srv.server.ports.api}`;
  const login = await fetch(`${api}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ username: srv.customer.username, password: srv.customer.password }) });
  const token = ((await login.json()) as { access_token: string }).access_token;
  const chrome = (v: number) => encodeURIComponent(`Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/12${v}.0.0.0 Safari/537.36`);
  const q = (v: number) => `p=${srv.customer.partner_id}&k=${srv.customer.prebid_key}&pub=p&node=n&ip=73.162.11.${20 + v}&ua=${chrome(v)}&uid=reload-cookie&sid=s.example&adt=1&dvt=2`;
  for (let v = 0; v < 4; v++) {
    const r = await fetch(`${srv.prebid}/api/v1/ivt/lookup?${q(v)}`, { headers: { connection: 'close' } });
    t.equal(r.status, 200);
  }
  type Explained = { response: { components: { p_hist: number } }; signals: { history: { uidDistinctUas: number; uidSeen: number } } };
  const explain = async (): Promise<Explained> => {
    const r = await fetch(`${api}/v1/account/explain?${q(4)}`, { headers: { authorization: `Bearer ${token}` } });
    return (await r.json()) as Explained;
  };
  const before = await explain();
  t.equal(before.signals.history.uidDistinctUas, 5, 'four UAs seen by the threads, plus the explained one');
  t.ok(before.signals.history.uidSeen > 3.9, `four lookups counted (${before.signals.history.uidSeen})`);
  t.ok(before.response.components.p_hist > 0, `history has a say (p_hist ${before.response.components.p_hist})`);

  t.same(await srv.server.reload(), { ok: true, errors: [] }, 'the reload succeeds');
  const after = await explain();
  t.equal(after.signals.history.uidDistinctUas, before.signals.history.uidDistinctUas, 'the same distinct UAs after the reload');
  t.ok(after.signals.history.uidSeen > before.signals.history.uidSeen - 0.1, `the count did not reset (${before.signals.history.uidSeen} -> ${after.signals.history.uidSeen})`);
  t.ok(Math.abs(after.response.components.p_hist - before.response.components.p_hist) < 0.01, 'and p_hist is what it was');
  // The threads, not only explain, still see it: one more lookup on the lookup port counts on top.
  const r = await fetch(`${srv.prebid}/api/v1/ivt/lookup?${q(5)}`);
  t.equal(r.status, 200);
  const last = await explain();
  t.equal(last.signals.history.uidDistinctUas, 6, 'a thread after the reload adds to the same sets');
});

t.test('reloads asked for at once (a refresh, `ivtd data update`, SIGHUP) run one after the other, and each answers', async (t) => {
  const srv = await startTestServer({ threads: 2 });
  t.teardown(() => srv.stop());
  const t0 = Date.now();
  // Side by side they took the same load number: the threads' answers to one were taken for
  // the other's, and one reload waited 30 s for an answer that had gone, then failed.
  const results = await Promise.all([srv.server.reload(), srv.server.reload(), srv.server.reload()]);
  t.same(results, [{ ok: true, errors: [] }, { ok: true, errors: [] }, { ok: true, errors: [] }], 'all three succeed');
  t.ok(Date.now() - t0 < 20_000, `none waits for a lost answer (${Date.now() - t0} ms)`);
  const r = await fetch(`${srv.prebid}/health-check`);
  t.equal(r.status, 200, 'and the threads serve');
});
