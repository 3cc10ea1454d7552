// Two lookup threads on one ephemeral port: both start, lookups are answered, keys pushed
// after start reach every thread, and the server stops cleanly.
import t from 'tap';
import { startTestServer } from '../helpers/server.ts';

t.test('two lookup threads share the pre-bid port', async (t) => {
  const srv = await startTestServer({ threads: 2 });
  t.teardown(() => srv.stop());
  t.equal(srv.server.config.threads, 2);
  const answeredBy = new Set<number>();
  srv.server.countSinks.push((_rows, stats) => {
    if ((stats.byStatus['200'] ?? 0) > 0) answeredBy.add(stats.thread);
  });
  const ua = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36');
  const statuses: number[] = [];
  // Fresh connections each time, so the kernel spreads them over both listening threads.
  for (let i = 0; i < 40; i++) {
    const r = await fetch(
      `${srv.prebid}/api/v1/ivt/lookup?p=${srv.customer.partner_id}&k=${srv.customer.prebid_key}&pub=p&node=n&ip=73.162.10.${i + 1}&ua=${ua}&uid=u${i}&sid=s.example&adt=1&dvt=2`,
      { headers: { connection: 'close' } },
    );
    statuses.push(r.status);
    await r.arrayBuffer();
  }
  t.same([...new Set(statuses)], [200], 'every lookup answered with the key created after start');
  // Threads report once a second; 40 fresh connections all landing on one thread has odds 2^-39.
  const end = Date.now() + 5000;
  while (answeredBy.size < 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
  t.same([...answeredBy].sort(), [0, 1], 'both threads answered lookups');
});
