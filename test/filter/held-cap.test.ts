// A filter holds its upstream's answers whole until they end: under many concurrent requests
// whose answers are large and slow, what it holds stays under its cap (the memory budget's
// filter_held part); past it a request is answered no-bid as an upstream error and counted,
// never half an answer, and the process goes on serving. Once the burst is over, nothing is
// held any more (the count returns to 0: no bytes are lost track of).
import t from 'tap';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { Store } from '../../src/store/db.ts';
import { createCustomer } from '../../src/store/customers.ts';
import { FILTER_HELD_MB, minimumBudgetMb } from '../../src/memory/budget.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { SHAPES } from '../helpers/ortb-shapes.ts';
import { until } from '../helpers/until.ts';
import { metricValue } from './metric-value.ts';

/** A clean bid request without its tmax (120 ms): the filter's own timeout (5 s) applies. */
const CLEAN = { ...(SHAPES['web banner, site and publisher, schain in source']! as Record<string, unknown>), tmax: undefined };
/** Each answer: 2 MB, written 128 KB at a time every 10 ms (about 160 ms an answer). */
const ANSWER_BYTES = 2 << 20;
const PIECE = 128 << 10;
const CONCURRENT = 64;


t.test('large slow answers under many concurrent requests: held within the cap, the rest no-bid, counted; the process serves on', async (t) => {
  // The upstream: every answer 2 MB, slowly.
  let served = 0;
  const upstream = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      served++;
      // Each answer its own letter (the filter reuses its answers' buffers: none may bleed into another).
      const fill = 0x61 + (served % 26);
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': ANSWER_BYTES, 'X-Fill': String(fill) });
      let sent = 0;
      const piece = Buffer.alloc(PIECE, fill);
      const more = () => {
        if (res.destroyed) return;
        const n = Math.min(PIECE, ANSWER_BYTES - sent);
        sent += n;
        if (sent >= ANSWER_BYTES) res.end(piece.subarray(0, n));
        else {
          res.write(piece.subarray(0, n));
          setTimeout(more, 10);
        }
      };
      more();
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    upstream.closeAllConnections();
    upstream.close();
  });
  const upPort = (upstream.address() as AddressInfo).port;

  const dir = mkdtempSync(join(tmpdir(), 'ivtd-held-cap-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = await Store.open(dir);
  const customer = await createCustomer(store, { name: 'Held Co', username: 'held', password: 'correct horse battery' });
  await store.close();
  // The least budget one thread and one filter may have: the filter's cap is FILTER_HELD_MB in full.
  const filter = { name: 'big', port: 0, upstream: `http://127.0.0.1:${upPort}/bid`, partner: customer.partner_id, mode: 'block' as const, nobid: 'nbr' as const, timeoutMs: 5000, maxSockets: 64 };
  const s = await startTestServer({ threads: 1, memoryBudget: minimumBudgetMb(1, 1), filters: [filter] }, dir);
  t.teardown(() => s.stop());
  const fport = s.server.lookups.filterPorts.big!;
  const cap = FILTER_HELD_MB << 20;
  t.equal(await metricValue(s, 'ivtd_memory_budget_bytes', { part: 'filter_held' }), cap, "the budget's filter_held part is the filter's cap");

  const body = JSON.stringify(CLEAN);
  const one = async (): Promise<{ status: number; bytes: number; nobid: string | null; text: string; intact: boolean }> => {
    const r = await fetch(`http://127.0.0.1:${fport}/`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    const buf = Buffer.from(await r.arrayBuffer());
    const fill = Number(r.headers.get('x-fill'));
    return { status: r.status, bytes: buf.byteLength, nobid: r.headers.get('x-ivtd-nobid'), text: buf.byteLength < 200 ? buf.toString() : '', intact: fill > 0 && buf.equals(Buffer.alloc(ANSWER_BYTES, fill)) };
  };
  // The most held, as the filter reports it each second (its peak over the second before), watched through the bursts.
  let peak = 0;
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      peak = Math.max(peak, await metricValue(s, 'ivtd_filter_held_bytes', { filter: 'big', state: 'peak' }));
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  // Two bursts of 64 at once: 128 MB of answers asked for, four times the cap.
  const answers = [];
  for (let round = 0; round < 2; round++) answers.push(...(await Promise.all(Array.from({ length: CONCURRENT }, one))));
  await new Promise((r) => setTimeout(r, 1500)); // the last second's report
  watching = false;
  await watcher;
  const whole = answers.filter((a) => a.status === 200 && a.bytes === ANSWER_BYTES);
  const refused = answers.filter((a) => a.nobid === 'upstream-error');
  t.equal(whole.length + refused.length, answers.length, 'every request: its whole answer, or a no-bid (never half an answer)');
  t.ok(whole.length >= 8, `answers that fit came through whole (${whole.length})`);
  t.ok(whole.every((a) => a.intact), 'each with its own bytes');
  t.ok(refused.length > 0, `the cap was hit: ${refused.length} answered no-bid`);
  t.ok(refused.every((a) => a.status === 200 && JSON.parse(a.text).nbr === 1), 'each no-bid: nbr 1 (technical error)');
  t.ok(served >= whole.length, `the upstream served ${served}`);

  // Counted: as upstream errors, and among them the cap's refusals.
  await until('counted', async () => (await metricValue(s, 'ivtd_filter_over_cap_total', { filter: 'big', what: 'request' })) === refused.length);
  t.ok((await metricValue(s, 'ivtd_filter_requests_total', { filter: 'big', outcome: 'upstream_error' })) >= refused.length, 'and as upstream errors');
  // Held bytes: never past the cap but for what client reads already returned (one read a
  // connection at most) and, for a moment, the answer being handed over (its copy and the client's).
  t.ok(peak > cap / 2 && peak <= cap + CONCURRENT * 65536 + ANSWER_BYTES + 65536, `peak held ${(peak / 1048576).toFixed(1)} MB, cap ${FILTER_HELD_MB} MB`);
  // Nothing is held once every answer is out (no byte lost track of).
  await until('nothing held', async () => (await metricValue(s, 'ivtd_filter_held_bytes', { filter: 'big', state: 'now' })) === 0 && (await metricValue(s, 'ivtd_filter_held_bytes', { filter: 'big', state: 'peak' })) === 0);

  // The process lives, and the filter serves again at full size.
  const after = await one();
  t.same([after.status, after.bytes], [200, ANSWER_BYTES], 'after the burst: a whole answer again');
  const health = await fetch(`${s.prebid}/health-check`);
  t.equal(health.status, 200, 'the pre-bid port answers');
  t.equal(s.server.lookups.restarts, 0, 'no thread was replaced');
});
